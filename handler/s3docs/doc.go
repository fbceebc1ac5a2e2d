// Package s3docs is [handler.Documents] in Amazon S3: one GetObject per
// document, at the S3 object version the request names.
//
//	cfg, err := config.LoadDefaultConfig(ctx)
//	if err != nil { return err }
//	docs := s3docs.New(s3.NewFromConfig(cfg), os.Getenv("SQSONCE_DOCUMENTS_BUCKET"), os.Getenv("SQSONCE_DOCUMENTS_PREFIX"))
//
// # Where a document is
//
// A request's document.bucket and document.key, when set, name the object;
// otherwise the bucket given to [New] and the key "{prefix}{id}/{version}.txt".
// document.version_id, when set, reads that S3 version of the object, so a
// redelivery summarises the same bytes even after the object was
// overwritten. IAM: s3:GetObject, and s3:GetObjectVersion for version ids.
package s3docs

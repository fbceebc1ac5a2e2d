package pgstore

// SchemaOf is the SQL CreateSchema runs for table.
func SchemaOf(table string) string { return render(table).schema }

// SerializationAttempts is how often a statement refused with a
// serialization failure is sent.
const SerializationAttempts = serializationAttempts

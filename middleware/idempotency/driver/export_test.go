package driver

// SealCompressedData is the compressed seal SealDataFor writes where a
// store would not keep the uncompressed one, for the tests.
var SealCompressedData = sealCompressedData

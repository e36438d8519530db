package blob

// The label values of the metrics, for the tests of package blob_test.
var (
	OpNames     = opNames
	ResultNames = resultNames
)

package bucketsetup

// UncoveredOrigins is uncoveredOrigins, for the tests of package
// bucketsetup_test.
var UncoveredOrigins = uncoveredOrigins

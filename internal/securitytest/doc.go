// Package securitytest is the security suite: it replays, against the
// real `claimcheck` binary on 127.0.0.1, every attack docs/SECURITY.md
// lists, as an outsider would try it on the default configuration with
// auth on, and checks that each is refused and that nothing it aimed at
// was reached. The package has no code of its own; everything is in its
// _test.go files. Attacks on inputs also have fuzz targets beside their
// parsers (docs/SECURITY.md names them); the SQS pointer rules are held by
// the tests of the integrations/sqs module, which has its own go.mod.
package securitytest

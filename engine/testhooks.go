package engine

import "context"

// testHooks are points where a test stops an operation of the store, to
// kill or inspect the process at exactly that point. Every hook is nil in
// production: a put checks one nil func. Unit tests set them on a Store
// (export_test.go); the system tests' binary, built with the
// claimchecktest tag, sets them for the whole process from its
// environment (testhooks_claimchecktest.go), so the release binary holds
// neither the hooks' code nor their variables' names.
type testHooks struct {
	// afterObjectWrite runs in every put after its object is written
	// and before its commit; an error fails the put.
	afterObjectWrite func(ctx context.Context) error
}

// processHooks are the hooks every Store of the process opens with.
var processHooks testHooks

// Package allstores registers every storage backend claimcheck ships
// with blob.Open, by importing each backend package: a program that
// imports it opens file://, mem://, s3://, gs:// and azblob:// URLs. The engine imports it,
// so engine.Open takes any of those storage URLs. A new backend is a
// package of its own (blob/<name>store, registering its scheme in an
// init function) plus one import line here.
package allstores

import (
	_ "github.com/claimcheck/claimcheck/blob/azurestore"
	_ "github.com/claimcheck/claimcheck/blob/filestore"
	_ "github.com/claimcheck/claimcheck/blob/gcsstore"
	_ "github.com/claimcheck/claimcheck/blob/memstore"
	_ "github.com/claimcheck/claimcheck/blob/s3store"
)

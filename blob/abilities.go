package blob

// Abilities are the optional abilities of a store, the ones only some
// backends have: each field is what serves the ability (the store, or a
// wrapper's stand-in that measures it), nil where the store lacks it.
// The engine and the sweeper ask AbilitiesOf(store) and use what is not
// nil: with no Presigner direct uploads go through the server, with no
// BatchDeleter the sweeper deletes one object per request, with no
// Lifecycler the lifecycle safety net is skipped, with no Appender
// resumable uploads are refused, with no CORSConfigurer the bucket's
// CORS rules are not checked.
//
// The interfaces have disjoint method sets, so one value can fill
// several fields (an S3 bucket fills them all).
type Abilities struct {
	BatchDeleter   BatchDeleter
	Presigner      Presigner
	Lifecycler     Lifecycler
	Appender       Appender
	CORSConfigurer CORSConfigurer
}

// abilityCarrier is implemented by stores that wrap another store: their
// Abilities method says which abilities they carry. Go has no dynamic
// proxies, so a wrapper cannot have the methods of exactly the
// abilities its store has; it carries the store's Abilities value
// instead, each field passed on as it is or replaced by a stand-in that
// calls it (WithMetrics measures them, NewCounting counts batch
// deletes).
type abilityCarrier interface {
	Abilities() Abilities
}

// AbilitiesOf returns the optional abilities of s. A backend has an
// ability by having its methods (an *s3store.Bucket is a Presigner, ...),
// found by type assertion. A wrapper (WithMetrics, NewCounting) has an
// Abilities method instead, whose answer is then the whole answer: the
// abilities of the store it wraps, as it carries them. A type that
// embeds a Store (a test fake overriding one method) has neither, and so
// none of the abilities of the store it embeds unless it defines their
// methods itself: a method it overrides cannot be bypassed through an
// ability it does not know about.
func AbilitiesOf(s Store) Abilities {
	if c, ok := s.(abilityCarrier); ok {
		return c.Abilities()
	}
	var a Abilities
	a.BatchDeleter, _ = s.(BatchDeleter)
	a.Presigner, _ = s.(Presigner)
	a.Lifecycler, _ = s.(Lifecycler)
	a.Appender, _ = s.(Appender)
	a.CORSConfigurer, _ = s.(CORSConfigurer)
	return a
}

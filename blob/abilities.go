package blob

// A wrapper of a Store (metrics, counting, fault injection in tests) must
// keep the optional abilities of the store it wraps: the engine finds
// them by type assertion, so a wrapper that lacks a method its store has
// silently turns the ability off (direct uploads fall back to the
// server, the sweeper deletes one object per request, the lifecycle
// safety net is skipped), and one that has a method its store lacks
// claims an ability nobody can serve. Go has no dynamic proxies, so the
// wrapper's value must have the right method set from the start: the
// helpers here pick, among the combinations of abilities, the one the
// wrapped store has.

// abilities are the optional interfaces a store implements, nil where it
// does not.
type abilities struct {
	bd BatchDeleter
	ps Presigner
	lc Lifecycler
}

func abilitiesOf(s Store) abilities {
	var a abilities
	a.bd, _ = s.(BatchDeleter)
	a.ps, _ = s.(Presigner)
	a.lc, _ = s.(Lifecycler)
	return a
}

// expose returns base extended with exactly the abilities of a that are
// not nil. The four interfaces have disjoint method sets, so embedding
// them side by side is never ambiguous.
func expose(base Store, a abilities) Store {
	bd, ps, lc := a.bd != nil, a.ps != nil, a.lc != nil
	switch {
	case bd && ps && lc:
		return struct {
			Store
			BatchDeleter
			Presigner
			Lifecycler
		}{base, a.bd, a.ps, a.lc}
	case bd && ps:
		return struct {
			Store
			BatchDeleter
			Presigner
		}{base, a.bd, a.ps}
	case bd && lc:
		return struct {
			Store
			BatchDeleter
			Lifecycler
		}{base, a.bd, a.lc}
	case ps && lc:
		return struct {
			Store
			Presigner
			Lifecycler
		}{base, a.ps, a.lc}
	case bd:
		return struct {
			Store
			BatchDeleter
		}{base, a.bd}
	case ps:
		return struct {
			Store
			Presigner
		}{base, a.ps}
	case lc:
		return struct {
			Store
			Lifecycler
		}{base, a.lc}
	default:
		return base
	}
}

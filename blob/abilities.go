package blob

// A wrapper of a Store (metrics, counting, fault injection in tests) must
// keep the optional abilities of the store it wraps: the engine finds
// them by type assertion, so a wrapper that lacks a method its store has
// silently turns the ability off (direct uploads fall back to the
// server, the sweeper deletes one object per request, the lifecycle
// safety net is skipped, resumable uploads are refused), and one that has a method its store lacks
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
	ap Appender
}

func abilitiesOf(s Store) abilities {
	var a abilities
	a.bd, _ = s.(BatchDeleter)
	a.ps, _ = s.(Presigner)
	a.lc, _ = s.(Lifecycler)
	a.ap, _ = s.(Appender)
	return a
}

// mask has bit i set when the i-th ability (in the order of abilities'
// fields) is there.
func (a abilities) mask() int {
	m := 0
	for i, ok := range []bool{a.bd != nil, a.ps != nil, a.lc != nil, a.ap != nil} {
		if ok {
			m |= 1 << i
		}
	}
	return m
}

// expose returns base extended with exactly the abilities of a that are
// not nil: one struct type per combination, each embedding the
// interfaces it has. The interfaces have disjoint method sets, so
// embedding them side by side is never ambiguous.
func expose(base Store, a abilities) Store {
	switch a.mask() {
	case 0b0001:
		return struct {
			Store
			BatchDeleter
		}{base, a.bd}
	case 0b0010:
		return struct {
			Store
			Presigner
		}{base, a.ps}
	case 0b0011:
		return struct {
			Store
			BatchDeleter
			Presigner
		}{base, a.bd, a.ps}
	case 0b0100:
		return struct {
			Store
			Lifecycler
		}{base, a.lc}
	case 0b0101:
		return struct {
			Store
			BatchDeleter
			Lifecycler
		}{base, a.bd, a.lc}
	case 0b0110:
		return struct {
			Store
			Presigner
			Lifecycler
		}{base, a.ps, a.lc}
	case 0b0111:
		return struct {
			Store
			BatchDeleter
			Presigner
			Lifecycler
		}{base, a.bd, a.ps, a.lc}
	case 0b1000:
		return struct {
			Store
			Appender
		}{base, a.ap}
	case 0b1001:
		return struct {
			Store
			BatchDeleter
			Appender
		}{base, a.bd, a.ap}
	case 0b1010:
		return struct {
			Store
			Presigner
			Appender
		}{base, a.ps, a.ap}
	case 0b1011:
		return struct {
			Store
			BatchDeleter
			Presigner
			Appender
		}{base, a.bd, a.ps, a.ap}
	case 0b1100:
		return struct {
			Store
			Lifecycler
			Appender
		}{base, a.lc, a.ap}
	case 0b1101:
		return struct {
			Store
			BatchDeleter
			Lifecycler
			Appender
		}{base, a.bd, a.lc, a.ap}
	case 0b1110:
		return struct {
			Store
			Presigner
			Lifecycler
			Appender
		}{base, a.ps, a.lc, a.ap}
	case 0b1111:
		return struct {
			Store
			BatchDeleter
			Presigner
			Lifecycler
			Appender
		}{base, a.bd, a.ps, a.lc, a.ap}
	default:
		return base
	}
}

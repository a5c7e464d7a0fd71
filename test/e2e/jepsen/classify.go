package jepsen

// classify names the violations in one id's history (ordered by call) by
// looking at real-time order directly. It agrees with the porcupine model on
// the histories the tests record, but says which rule broke and where.
func classify(key string, ops []Op) []Finding {
	var out []Finding
	var created *Op
	for i := range ops {
		if ops[i].Kind == KindCreate && ops[i].Result == ResultOK {
			created = &ops[i]
			break
		}
	}
	if created == nil {
		return []Finding{{Kind: FindBadOutcome, Key: key, Op: ops[0], Detail: "no acknowledged create for this id"}}
	}
	seen := visibleAt(ops, created)
	consumed := 0
	for i, op := range ops {
		switch {
		case op.Kind == KindCreate || op.Result == ResultUnknown:
		case op.Result == ResultOK && op.Kind == KindRead:
			out = append(out, checkContent(key, op, created)...)
			if d, ok := removedBefore(ops, op.Call); ok {
				out = append(out, Finding{Kind: FindStale, Key: key, Op: op,
					Detail: "after " + d.Kind.String() + " " + d.String(), Lag: op.Call - d.Return})
			}
		case op.Result == ResultOK && op.Kind == KindConsume:
			out = append(out, checkContent(key, op, created)...)
			consumed++
			if consumed == 2 {
				out = append(out, Finding{Kind: FindBurnTwice, Key: key, Op: op})
			}
		case op.Result == ResultNotFound && seen < op.Call && (!mayHaveRemoved(ops, i) || servedAfter(ops, op.Return)):
			kind := FindFalse404
			if op.Kind == KindConsume {
				kind = FindBurnFalse
			}
			out = append(out, Finding{Kind: kind, Key: key, Op: op,
				Detail: "after create " + created.String(), Lag: op.Call - seen})
		}
	}
	return out
}

// visibleAt is when the paste was known to exist: the create's
// acknowledgement or an earlier answer that returned its content.
func visibleAt(ops []Op, created *Op) int64 {
	t := created.Return
	for _, op := range ops {
		if op.Kind != KindCreate && op.Kind != KindDelete && op.Result == ResultOK {
			t = min(t, op.Return)
		}
	}
	return t
}

// servedAfter reports whether a read or consume that started after t
// returned the content while no delete or consume had completed yet: then
// the paste was not gone at t. (When one had, that read is the stale one.)
func servedAfter(ops []Op, t int64) bool {
	for _, op := range ops {
		if (op.Kind == KindRead || op.Kind == KindConsume) && op.Result == ResultOK && op.Call > t {
			if _, removed := removedBefore(ops, op.Call); !removed {
				return true
			}
		}
	}
	return false
}

func checkContent(key string, op Op, created *Op) []Finding {
	if op.Content == created.Content {
		return nil
	}
	return []Finding{{Kind: FindWrong, Key: key, Op: op, Detail: "posted " + short(created.Content)}}
}

// removedBefore returns a delete or consume that completed with ok before t.
func removedBefore(ops []Op, t int64) (Op, bool) {
	for _, op := range ops {
		if (op.Kind == KindDelete || op.Kind == KindConsume) && op.Result == ResultOK && op.Return < t {
			return op, true
		}
	}
	return Op{}, false
}

// mayHaveRemoved reports whether some other delete or consume that may have
// taken effect (ok or unknown) was called before ops[i] returned.
func mayHaveRemoved(ops []Op, i int) bool {
	for j, op := range ops {
		if j == i || (op.Kind != KindDelete && op.Kind != KindConsume) || op.Result == ResultNotFound {
			continue
		}
		if op.Call <= ops[i].Return {
			return true
		}
	}
	return false
}

// Lost checks the final sweep: want maps every acknowledged create that was
// never deleted or consumed to its content, and reads holds the last answer
// of each node for each such id. Anything but the exact bytes is lost.
func Lost(want map[string]string, reads []Op) []Finding {
	var out []Finding
	for _, r := range reads {
		content, ok := want[r.Key]
		if !ok {
			continue
		}
		if r.Result != ResultOK || r.Content != content {
			out = append(out, Finding{Kind: FindLost, Key: r.Key, Op: r, Detail: "posted " + short(content)})
		}
	}
	return out
}

package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// The garbage collector's headroom. A node's heap is mostly the index of
// its pastes (their content is on disk), which lives as long as they do,
// so GOGC's default of 100 (the heap may grow to twice what is live before
// the next collection) doubles the memory a node needs for its index.
// tuneGC rather keeps the headroom near gcHeadroom, or a gcHeadroomShare
// of the live heap once that is larger: the heap grows by an eighth, plus
// a few MiB, instead of doubling. The runtime also keeps about a twentieth
// over its heap goal from the OS, so a headroom counts about 1.05 times.
//
// The price is collector CPU, which a store's writes and reads pay: the
// smaller the headroom, the more often a busy node collects, and each
// collection marks the whole index. A larger floor takes more creates and
// more memory, and the memory row of make bench allows 128 bytes a paste
// plus 64 MiB. Beyond 128 MiB live the eighth applies and the floor no
// longer matters. GOGC=100 in the environment restores the default.
const (
	gcHeadroom      = 16 << 20
	gcHeadroomShare = 8 // of the live heap: 1/8
	gcMaxPercent    = 1000
	// gcMemoryShare is the soft memory limit, as a share of the memory
	// available (the machine's or the cgroup's): it makes collections more
	// frequent rather than let garbage push the node out of memory.
	gcMemoryShare = 0.75
	// gcExportHeadroom is the headroom an export adds while it builds.
	// An export allocates several times the store's size in short-lived
	// buffers, and with the usual headroom the node would collect dozens
	// of times during one, each collection marking the whole store. The
	// node's heap may grow by up to this much while exports build,
	// however many (less on a heap under 14 MiB, where GOGC stays at
	// gcMaxPercent; the soft memory limit, where the node knows its
	// memory, still holds), and the runtime gives it back to the OS in
	// the minutes after.
	gcExportHeadroom = 128 << 20
	// startHeadroomFor bounds how long a start holds gcExportHeadroom
	// while it loads the snapshot's index and replays the log, until the
	// node has caught up (serve): with the usual headroom it would collect
	// many times before it is ready, each collection marking a growing
	// index. The heap it leaves goes back to the OS in the minutes after,
	// as an export's does.
	startHeadroomFor = time.Minute
)

var gcOnce sync.Once

// tuner is the process's gcTuner; nil when GOGC is set.
var tuner *gcTuner

// tuneGC applies the settings above, once per process, unless the operator
// set GOGC or GOMEMLIMIT, which then win.
func tuneGC() { gcOnce.Do(setGC) }

func setGC() {
	if _, ok := os.LookupEnv("GOMEMLIMIT"); !ok {
		if mem := availableMemory(); mem > 0 {
			debug.SetMemoryLimit(int64(float64(mem) * gcMemoryShare))
		}
	}
	if _, ok := os.LookupEnv("GOGC"); !ok {
		tuner = &gcTuner{sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}, percent: 100}
		tuner.arm()
	}
}

// gcTuner sets GOGC after every collection from the live heap it found.
type gcTuner struct {
	sample []metrics.Sample // used only by tune, on the cleanup goroutine

	mu      sync.Mutex
	percent int
	live    uint64 // the live heap the last collection found
	exports int    // exports building, which add gcExportHeadroom
}

// gcSentinel is garbage as soon as it is allocated; its cleanup runs after
// the next collection. It is not a tiny allocation, whose cleanup may
// never run.
type gcSentinel struct{ _ [64]byte }

// arm makes t run once after the next collection.
func (t *gcTuner) arm() {
	runtime.AddCleanup(&gcSentinel{}, func(t *gcTuner) { t.tune(); t.arm() }, t)
}

// tune sets GOGC so that the next collection starts when the heap has
// grown by the headroom.
func (t *gcTuner) tune() {
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.live = t.sample[0].Value.Uint64()
	t.apply()
}

// apply sets GOGC from t's live heap and the exports building: however
// many build at once, they add gcExportHeadroom once. t.mu is held.
func (t *gcTuner) apply() {
	var extra uint64
	if t.exports > 0 {
		extra = gcExportHeadroom
	}
	if percent := gcPercent(t.live, extra); percent != t.percent {
		t.percent = percent
		debug.SetGCPercent(percent)
	}
}

// holdHeadroom counts an export building until the function it returns is
// called: while any builds, the collector's headroom has gcExportHeadroom
// more. The api server calls it around an export's build
// (api.Config.ExportStarted). Without a tuner (GOGC set) it does nothing.
func holdHeadroom() (release func()) {
	if tuner == nil {
		return func() {}
	}
	return tuner.hold()
}

// hold counts an export in t until release is called.
func (t *gcTuner) hold() (release func()) {
	t.mu.Lock()
	t.exports++
	t.apply()
	t.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			t.exports--
			t.apply()
			t.mu.Unlock()
		})
	}
}

// gcPercent is the GOGC that gives a live heap of live bytes its headroom,
// plus extra: 16 MiB from 1.6 MiB live (below, GOGC stays at
// gcMaxPercent) up to 128 MiB live, then an eighth, GOGC 12. A small node
// thus collects every 16 MiB allocated, not at the runtime's 4 MiB floor,
// which under reads would collect many times a second.
func gcPercent(live, extra uint64) int {
	live = max(live, 1)
	headroom := max(gcHeadroom, live/gcHeadroomShare) + extra
	return int(min(gcMaxPercent, headroom*100/live))
}

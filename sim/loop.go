package sim

import "sync"

// mainLoop imitates the firmware's main task and its Application::Schedule:
// tasks run one at a time, in the order they were scheduled. A tool call runs
// there, and so does sending every MCP reply (docs/protocol.md §8.2: replies go through
// SendMcpMessage, which schedules), so a slow tool delays later replies just
// as on a real device (§12.13).
//
// No goroutine exists while the queue is empty; one is started on demand and
// exits when the queue drains, so idle devices cost nothing here.
type mainLoop struct {
	mu      sync.Mutex
	queue   []func()
	running bool
	idle    chan struct{} // closed when the current worker exits
}

// schedule queues f to run after everything already queued.
func (l *mainLoop) schedule(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.queue = append(l.queue, f)
	if !l.running {
		l.running = true
		l.idle = make(chan struct{})
		go l.work(l.idle)
	}
}

func (l *mainLoop) work(idle chan struct{}) {
	defer close(idle)
	for {
		l.mu.Lock()
		if len(l.queue) == 0 {
			l.running = false
			l.queue = nil // release the backing array
			l.mu.Unlock()
			return
		}
		f := l.queue[0]
		l.queue[0] = nil
		l.queue = l.queue[1:]
		l.mu.Unlock()
		f()
	}
}

// wait blocks until the queue is empty and no worker runs.
func (l *mainLoop) wait() {
	for {
		l.mu.Lock()
		if !l.running {
			l.mu.Unlock()
			return
		}
		idle := l.idle
		l.mu.Unlock()
		<-idle
	}
}

package cdpdriver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mafredri/cdp"
	"github.com/rs/zerolog"
)

// LaunchOptions says how to start Chromium. The zero value starts a headed
// Chromium found by FindChromium with a throwaway profile.
type LaunchOptions struct {
	Binary      string   // "" = FindChromium()
	Headless    bool     // the new headless mode (--headless)
	UserDataDir string   // "" = a fresh temp dir, removed by Close; a given dir is kept
	Args        []string // extra flags, appended after framebus's own
	// NoSystemDNS keeps Chromium from resolving any name through the
	// machine's resolver (see systemDNS): for a browser behind a
	// proxy, which resolves what it connects to, so that nothing else
	// (WebRTC's STUN and TURN names) can carry data out in a DNS query.
	NoSystemDNS bool
	// WindowWidth and WindowHeight size the browser's windows
	// (--window-size) when both are set: the ones it opens itself, such
	// as a page's popups, are laid out at that size before framebus
	// emulates a viewport on them, or without one.
	WindowWidth, WindowHeight int
	// User is the account Chromium runs as when this process is root
	// (see runas.go): "" is DefaultBrowserUser, RootUser keeps it root
	// without its sandbox. Not root, Chromium runs as this process's
	// user, sandbox on, whatever User says.
	User string
	// DebuggingPort also opens a DevTools port on 127.0.0.1, which any
	// local user can connect to and drive the browser through: only for
	// tests that need a browser like a user's own Chrome run with
	// --remote-debugging-port, to attach to. framebus never sets it; its
	// browsers are reached through their pipe alone (Process.Connect).
	DebuggingPort bool
	StartTimeout  time.Duration // until the browser answers on its pipe; default 30s
	Logger        zerolog.Logger
}

// Process is a running Chromium started by Launch.
type Process struct {
	cmd         *exec.Cmd
	pipe        *pipeTransport // the DevTools pipe
	wsURL       string         // only with DebuggingPort
	devtoolsURL string
	userDataDir string
	ownDir      bool         // we created userDataDir, so Close removes it
	user        *BrowserUser // nil: chromium runs as this process's user
	lock        *os.File     // holds a given userDataDir's lock (profilelock.go)
	log         zerolog.Logger
	stderr      *launchStderr

	done    chan struct{} // closed when cmd.Wait returned
	waitErr error         // cmd.Wait's result; read only after done

	closeOnce sync.Once
	closeErr  error
}

const (
	// launchHelperGrace is how long helpers may outlive the browser
	// process before they are killed.
	launchHelperGrace    = 2 * time.Second
	launchDefaultTimeout = 30 * time.Second
	// launchTermGrace is how long Close lets Chromium shut down after
	// SIGTERM before it is killed.
	launchTermGrace = 3 * time.Second
	// launchDrainWait bounds the wait for the last helper process to close
	// its end of the stderr pipe once the browser process is gone.
	launchDrainWait = 5 * time.Second
	launchTailLines = 12
	launchMaxLine   = 8 << 10
	launchEndpoint  = "DevTools listening on "
)

// launchFlags are always passed. Every one but the first keeps Chromium
// quiet, fast to start and free of background traffic; none changes what
// pages see.
var launchFlags = []string{
	"--remote-debugging-pipe", // CDP on fds 3 and 4 (pipe.go); no port
	"--no-first-run",
	"--no-default-browser-check",
	"--disable-background-networking",
	"--disable-component-update",
	"--disable-sync",
	"--disable-quic",
	"--disable-gpu",
	"--disable-dev-shm-usage",
	"--disable-features=Translate,MediaRouter,OptimizationHints",
	"--disable-extensions",
	"--disable-popup-blocking",
	"--password-store=basic",
	"--use-mock-keychain",
	"--mute-audio",
	"--disable-renderer-backgrounding",
	"--disable-background-timer-throttling",
	"--disable-backgrounding-occluded-windows",
	"--disable-hang-monitor",
	"--disable-ipc-flooding-protection",
}

// launchPortFlags open the DevTools port of LaunchOptions.DebuggingPort.
var launchPortFlags = []string{
	"--remote-debugging-port=0", // the kernel picks the port; we read it back
	"--remote-debugging-address=127.0.0.1",
}

// Launch starts Chromium with --remote-debugging-pipe, so that no other
// process can reach its DevTools (Connect is the way in), and returns once
// it answers a first command on the pipe. ctx bounds the startup only:
// cancelling it later does not stop the browser, Close does.
//
// Chromium runs in its own process group, so Close can stop it with every
// helper process, and with a parent-death signal, so it is killed if this
// process dies without calling Close. If Chromium exits before it is ready,
// or StartTimeout passes, Launch cleans up and returns an error quoting the
// last lines Chromium wrote to stderr.
//
// A browser that crashes before it is ready (killed by a signal, as a
// segmentation fault: seen once in a while at start on a loaded machine,
// and twice in a row once) is launched again, launchTries in all, a
// little later each time, before Launch gives up.
func Launch(ctx context.Context, opts LaunchOptions) (*Process, error) {
	p, err := launchOnce(ctx, opts)
	for try := 1; try < launchTries && errors.Is(err, errCrashedAtStart) && ctx.Err() == nil; try++ {
		opts.Logger.Warn().Err(err).Int("try", try).Msg("chromium crashed at start: launching it again")
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(time.Duration(try) * 250 * time.Millisecond):
		}
		p, err = launchOnce(ctx, opts)
	}
	return p, err
}

// launchTries bounds the launches of a browser that crashes at start.
const launchTries = 3

// errCrashedAtStart: the browser was killed by a signal before it was
// ready.
var errCrashedAtStart = errors.New("crashed at start")

// exitedBeforeReady is the error of a browser that exited before it was
// ready, errCrashedAtStart among its causes when a signal killed it.
func exitedBeforeReady(binary string, waitErr error) error {
	err := fmt.Errorf("launch chromium %s: it exited (%s) before it was ready", binary, launchExitStatus(waitErr))
	var exit *exec.ExitError
	if errors.As(waitErr, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return fmt.Errorf("%w%w", err, wrappedOnly{errCrashedAtStart})
		}
	}
	return err
}

// wrappedOnly wraps an error without adding to the message.
type wrappedOnly struct{ err error }

func (w wrappedOnly) Error() string { return "" }
func (w wrappedOnly) Unwrap() error { return w.err }

// launchOnce is one try of Launch.
func launchOnce(ctx context.Context, opts LaunchOptions) (*Process, error) {
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("launch chromium: %w", err)
	}
	binary := opts.Binary
	if binary == "" {
		var err error
		if binary, err = FindChromium(); err != nil {
			return nil, err
		}
	}
	timeout := opts.StartTimeout
	if timeout <= 0 {
		timeout = launchDefaultTimeout
	}
	p := &Process{userDataDir: opts.UserDataDir, log: opts.Logger, done: make(chan struct{})}
	var err error
	if p.user, err = browserUserFor(opts.User); err != nil {
		return nil, fmt.Errorf("launch chromium: %w", err)
	}
	if p.userDataDir == "" {
		dir, err := os.MkdirTemp(p.user.tempDir(), "framebus-profile-*")
		if err != nil {
			return nil, fmt.Errorf("launch chromium: create profile dir: %w", err)
		}
		p.userDataDir, p.ownDir = dir, true
	}
	// Root works in the profile only through this descriptor: see
	// profiledir.go for why.
	dir, err := openProfileDir(p.userDataDir, p.user, !p.ownDir)
	if err != nil {
		p.removeDir()
		return nil, fmt.Errorf("launch chromium: %w", err)
	}
	defer dir.Close()
	if !p.ownDir {
		lock, err := lockProfile(dir)
		if err != nil {
			return nil, err
		}
		p.lock = lock
		defer func() {
			if p.cmd == nil || p.cmd.Process == nil {
				p.unlock() // the launch failed before Chromium ran
			}
		}()
	}

	if err := systemDNS(dir, p.user, opts.NoSystemDNS); err != nil {
		p.removeDir()
		return nil, fmt.Errorf("launch chromium: set its DNS: %w", err)
	}
	if p.user != nil {
		if err := p.user.adopt(dir); err != nil {
			p.removeDir()
			return nil, fmt.Errorf("launch chromium: %w", err)
		}
	}
	args := append([]string(nil), launchFlags...)
	if opts.DebuggingPort {
		args = append(args, launchPortFlags...)
	}
	args = append(args, "--user-data-dir="+p.userDataDir)
	if p.user == nil && os.Geteuid() == 0 {
		// Chromium refuses to run as root with its sandbox on.
		args = append(args, "--no-sandbox")
	}
	if opts.Headless {
		args = append(args, "--headless")
	}
	if opts.WindowWidth > 0 && opts.WindowHeight > 0 {
		args = append(args, fmt.Sprintf("--window-size=%d,%d", opts.WindowWidth, opts.WindowHeight))
	}
	args = append(args, opts.Args...)
	args = append(args, "about:blank")

	// An *os.File as Stdout/Stderr makes exec hand it to the child without a
	// copying goroutine, so Wait returns as soon as the browser exits even
	// though its helpers inherit the pipe.
	r, w, err := os.Pipe()
	if err != nil {
		p.removeDir()
		return nil, fmt.Errorf("launch chromium: %w", err)
	}
	// The DevTools pipe: Chromium reads commands on its fd 3 and writes
	// on its fd 4 (ExtraFiles start at 3).
	toBrowser, toBrowserW, err := os.Pipe()
	if err != nil {
		r.Close()
		w.Close()
		p.removeDir()
		return nil, fmt.Errorf("launch chromium: %w", err)
	}
	fromBrowserR, fromBrowser, err := os.Pipe()
	if err != nil {
		for _, f := range []*os.File{r, w, toBrowser, toBrowserW} {
			f.Close()
		}
		p.removeDir()
		return nil, fmt.Errorf("launch chromium: %w", err)
	}
	p.cmd = exec.Command(binary, args...)
	p.cmd.Stdout = w
	p.cmd.Stderr = w
	p.cmd.ExtraFiles = []*os.File{toBrowser, fromBrowser}
	p.cmd.SysProcAttr = launchSysProcAttr()
	if p.user != nil {
		p.cmd.SysProcAttr.Credential = p.user.credential()
		p.cmd.Env = p.user.environ()
	}
	startErr := p.cmd.Start()
	// The child's ends are the child's alone: the reader sees the end
	// of the pipe when the browser's processes are gone.
	w.Close()
	toBrowser.Close()
	fromBrowser.Close()
	if startErr != nil {
		r.Close()
		toBrowserW.Close()
		fromBrowserR.Close()
		p.removeDir()
		return nil, fmt.Errorf("launch chromium %s: %w", binary, startErr)
	}
	p.log = p.log.With().Int("pid", p.cmd.Process.Pid).Logger()
	p.stderr = launchReadStderr(r, p.log)
	p.pipe = newPipeTransport(toBrowserW, fromBrowserR, p.log)
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.done)
	}()

	fail := func(err error) (*Process, error) {
		p.Close() // also drains stderr to the end, so the tail is complete
		return nil, fmt.Errorf("%w%s", err, p.stderr.describeTail())
	}
	readyCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ready := make(chan error, 1)
	go func() { ready <- p.pipe.ready(readyCtx) }()
	endpoint := p.stderr.endpoint
	if !opts.DebuggingPort {
		endpoint = nil // nothing to wait for
	}
	for waiting := true; waiting || endpoint != nil; {
		select {
		case err := <-ready:
			if err != nil {
				// The pipe broke: the browser is on its way out, so
				// let the error say how it exited.
				select {
				case <-p.done:
				case <-readyCtx.Done():
				}
				return fail(launchNotReady(ctx, p, binary, timeout, err))
			}
			waiting = false
		case ws := <-endpoint:
			u, err := url.Parse(ws)
			if err != nil || u.Host == "" {
				return fail(fmt.Errorf("launch chromium %s: unreadable DevTools endpoint %q", binary, ws))
			}
			p.wsURL, p.devtoolsURL, endpoint = ws, "http://"+u.Host, nil
		case <-p.done:
			return fail(exitedBeforeReady(binary, p.waitErr))
		case <-readyCtx.Done():
			return fail(launchNotReady(ctx, p, binary, timeout, readyCtx.Err()))
		}
	}
	p.log.Debug().Str("profile", p.userDataDir).Dur("took", time.Since(start)).Msg("chromium started")
	return p, nil
}

// launchNotReady says why the browser did not answer on its pipe in
// time: ctx ended, StartTimeout passed, or the pipe failed.
func launchNotReady(ctx context.Context, p *Process, binary string, timeout time.Duration, err error) error {
	select {
	case <-p.done: // the pipe closed because the browser exited
		return exitedBeforeReady(binary, p.waitErr)
	default:
	}
	if ctx.Err() != nil {
		return fmt.Errorf("launch chromium %s: %w", binary, ctx.Err())
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("launch chromium %s: no answer on its DevTools pipe after %s: %w", binary, timeout, context.DeadlineExceeded)
	}
	return fmt.Errorf("launch chromium %s: its DevTools pipe: %w", binary, err)
}

// Connect opens a browser-level connection over the browser's pipe (a
// session of its own: there may be several). ctx bounds the connect only.
func (p *Process) Connect(ctx context.Context, logger zerolog.Logger) (*Browser, error) {
	session, err := p.pipe.attachBrowser(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to browser: %w", err)
	}
	conn, err := dialPipe(ctx, session)
	if err != nil {
		return nil, fmt.Errorf("connect to browser: %w", err)
	}
	return &Browser{conn: conn, client: cdp.NewClient(conn), pipe: p.pipe, log: logger}, nil
}

// BrowserWebSocketURL is the browser target's endpoint,
// ws://127.0.0.1:PORT/devtools/browser/ID, with DebuggingPort; "" without.
func (p *Process) BrowserWebSocketURL() string { return p.wsURL }

// DevToolsURL is the HTTP endpoint, http://127.0.0.1:PORT, with
// DebuggingPort; "" without.
func (p *Process) DevToolsURL() string { return p.devtoolsURL }

// UserDataDir is the profile directory Chromium runs with.
func (p *Process) UserDataDir() string { return p.userDataDir }

// User is the account Chromium runs as, nil when it is this process's:
// whatever the browser is to read (a file to upload) must be readable
// by it.
func (p *Process) User() *BrowserUser { return p.user }

// Pid is the browser process id; it is also the id of its process group.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the browser process has exited, by Close or on its own.
func (p *Process) Done() <-chan struct{} { return p.done }

// Close stops Chromium: SIGTERM to its process group, SIGKILL if it has not
// exited after a few seconds, then SIGKILL to whatever helper process is
// left in the group. It waits for all of them and removes the profile
// directory if Launch created it. (Chromium's crash handlers detach into
// their own session, outside the group; they exit by themselves within a
// moment of the browser.) Close is safe to call more than once and
// after Chromium died on its own; later calls return the first result.
func (p *Process) Close() error {
	p.closeOnce.Do(func() { p.closeErr = p.stop() })
	return p.closeErr
}

// Kill ends Chromium at once: SIGKILL to its whole process group, with no
// grace for a clean exit, so a persistent profile may lose its last
// writes. Close, running or called next, then finishes quickly and still
// removes a temporary profile.
func (p *Process) Kill() {
	select {
	case <-p.done:
	default:
		_ = launchSignalGroup(p.cmd.Process.Pid, syscall.SIGKILL)
	}
}

func (p *Process) stop() error {
	start := time.Now()
	pgid := p.cmd.Process.Pid
	var errs []error
	select {
	case <-p.done:
	default:
		if err := launchSignalGroup(pgid, syscall.SIGTERM); err != nil {
			errs = append(errs, err)
		}
		t := time.NewTimer(launchTermGrace)
		select {
		case <-p.done:
		case <-t.C:
			p.log.Warn().Dur("grace", launchTermGrace).Msg("chromium ignored SIGTERM; killing it")
			if err := launchSignalGroup(pgid, syscall.SIGKILL); err != nil {
				errs = append(errs, err)
			}
			<-p.done
		}
		t.Stop()
	}
	// Helpers (zygote, renderers, GPU, utilities) may outlive the browser
	// process for a moment; they share its group, so sweep them too. The
	// group id cannot be reused while any member lives.
	// Every process of the group holds the stderr pipe; its end of file
	// means the last one is gone and nothing writes to the profile anymore.
	// Helpers get a moment to finish on their own first: after a clean
	// exit the network service is still writing the cookie store.
	if !p.stderr.wait(launchHelperGrace) {
		_ = launchSignalGroup(pgid, syscall.SIGKILL)
	}
	if !p.stderr.wait(launchDrainWait) {
		p.log.Warn().Msg("a chromium helper still holds stderr open")
		p.stderr.close()
	}
	p.pipe.Close() // its connections already failed when the browser went
	if err := p.removeDir(); err != nil {
		errs = append(errs, err)
	}
	p.unlock()
	p.log.Debug().Dur("took", time.Since(start)).Msg("chromium stopped")
	return errors.Join(errs...)
}

func (p *Process) removeDir() error {
	if !p.ownDir {
		return nil
	}
	err := os.RemoveAll(p.userDataDir)
	if err != nil {
		// A helper that died a moment ago may have left a file behind
		// while RemoveAll walked the tree; one retry settles it.
		err = os.RemoveAll(p.userDataDir)
	}
	if err != nil {
		return fmt.Errorf("remove chromium profile %s: %w", p.userDataDir, err)
	}
	return nil
}

func launchSysProcAttr() *syscall.SysProcAttr {
	// Pdeathsig fires when the OS thread that started Chromium exits. Go
	// keeps its threads for the life of the process unless a goroutine
	// exits while locked to one, so in practice it means "when we die".
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func launchSignalGroup(pgid int, sig syscall.Signal) error {
	err := syscall.Kill(-pgid, sig)
	if err == nil || errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return fmt.Errorf("signal chromium process group %d: %w", pgid, err)
}

func launchExitStatus(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// launchStderr drains Chromium's stderr (and stdout) for as long as any
// process of the browser holds it: it finds the DevTools endpoint, keeps
// the last lines for error messages and logs every line at debug level,
// so Chromium never blocks on a full pipe.
type launchStderr struct {
	f        *os.File
	endpoint chan string // receives the endpoint once
	eof      chan struct{}

	mu   sync.Mutex
	tail []string
}

func launchReadStderr(f *os.File, log zerolog.Logger) *launchStderr {
	s := &launchStderr{f: f, endpoint: make(chan string, 1), eof: make(chan struct{})}
	go s.run(log)
	return s
}

func (s *launchStderr) run(log zerolog.Logger) {
	defer close(s.eof)
	defer s.f.Close()
	found := false
	r := bufio.NewReaderSize(s.f, 4<<10)
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if room := launchMaxLine - len(line); room > 0 {
			line = append(line, chunk[:min(len(chunk), room)]...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if text := strings.TrimRight(string(line), "\r\n"); text != "" {
			log.Debug().Str("stderr", text).Msg("chromium")
			s.mu.Lock()
			if len(s.tail) == launchTailLines {
				s.tail = append(s.tail[:0], s.tail[1:]...)
			}
			s.tail = append(s.tail, text)
			s.mu.Unlock()
			if i := strings.Index(text, launchEndpoint); i >= 0 && !found {
				found = true
				s.endpoint <- strings.TrimSpace(text[i+len(launchEndpoint):])
			}
		}
		line = line[:0]
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				log.Debug().Err(err).Msg("reading chromium stderr")
			}
			return
		}
	}
}

// wait reports whether every writer closed the pipe within d.
func (s *launchStderr) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.eof:
		return true
	case <-t.C:
		return false
	}
}

// close stops the reader even though a writer is still alive.
func (s *launchStderr) close() {
	s.f.Close() // unblocks the pending read: the pipe is in the poller
	<-s.eof
}

// describeTail formats the last stderr lines for an error message.
func (s *launchStderr) describeTail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.tail) == 0 {
		return "; it wrote nothing to stderr"
	}
	return "; last stderr lines:\n\t" + strings.Join(s.tail, "\n\t")
}

// unlock releases a given profile's lock, once Chromium is gone.
func (p *Process) unlock() {
	if p.lock != nil {
		p.lock.Close()
		p.lock = nil
	}
}

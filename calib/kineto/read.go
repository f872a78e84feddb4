package kineto

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unsafe"

	"github.com/dcpsim/dcpsim/badinput"
)

// Limits on what Read reads.
const (
	// MaxTraceBytes bounds the JSON Read reads, decompressed: a larger file
	// (or a gzip bomb) stops there with an error.
	MaxTraceBytes int64 = 4 << 30
	// MaxTraceEvents bounds the number of traceEvents.
	MaxTraceEvents = 20_000_000
	// MaxKernelMicros is the longest kernel Read accepts: one hour, in
	// microseconds. A longer one is not a kernel timed in microseconds.
	MaxKernelMicros = 3.6e9
	// MaxTraceKeptBytes bounds the memory of what Read keeps of the events
	// (a GPU kernel, memcpy or memset 440 bytes, a cpu_op or annotation 72
	// plus its recorded inputs, a cuda_runtime launch 40; names apart, below):
	// about 300,000 kernels, or 500,000 ops of two recorded inputs each.
	// A trace that needs more is refused, not read in part (see
	// docs/limits.md: the process peaks near twice this).
	MaxTraceKeptBytes = 128 << 20
	// MaxTraceDevices bounds deviceProperties' entries (one per GPU the
	// process saw).
	MaxTraceDevices = 1024
	// MaxNameBytes bounds a name as kept: a longer kernel or op name is cut
	// to its first MaxNameBytes bytes (classification reads the kernel's own
	// name and its first template arguments, well inside). MaxNameTotalBytes
	// bounds the distinct names' bytes together: each distinct kernel name is
	// classified once by regular expressions, about a microsecond a byte.
	MaxNameBytes      = 4096
	MaxNameTotalBytes = 8 << 20
)

// The limits Read applies; tests lower them.
var (
	traceByteLimit  = MaxTraceBytes
	traceEventLimit = MaxTraceEvents
	traceKeptLimit  = int64(MaxTraceKeptBytes)
	traceNameLimit  = MaxNameTotalBytes
)

// maxOpInputs bounds the recorded inputs an op keeps (Input Dims entries).
const maxOpInputs = 64

// Read reads a PyTorch profiler (Kineto) Chrome trace, plain JSON or gzip
// (detected by its magic bytes), at most MaxTraceBytes of JSON after
// decompression and MaxTraceEvents events, keeping at most
// MaxTraceKeptBytes of them and MaxTraceDevices devices, its JSON within the shape limits (MaxTraceWhitespace,
// MaxTraceNesting, MaxTraceStringBytes, MaxTraceEventBytes) checked before
// it is decoded; names are cut to MaxNameBytes, at most MaxNameTotalBytes of
// distinct ones, and their control characters escaped
// (badinput.PrintableLine). It streams traceEvents, keeping of
// each event only what classification and shape inference need (kernels,
// memcpy/memset, cpu_ops and user annotations with their nesting, the
// recorded shapes of ops, cuda_runtime launches by correlation), then links
// every kernel to the op that launched it, classifies it and infers its
// shape (package documentation). name is the file name every error starts
// with ("trace.json: ...").
//
// It fails, naming the place (the event index and byte offset), for input
// that is not JSON, truncated JSON or gzip, JSON that is not a trace object
// with traceEvents, a trace without GPU kernels (recorded without
// ProfilerActivity.CUDA), a kernel whose ts is not a number or whose dur is
// missing, negative, not a number or over MaxKernelMicros, and input over
// the limits.
func Read(r io.Reader, name string) (*Trace, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var src io.Reader = br
	if head, _ := br.Peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: gzip header: %w", name, err)
		}
		zr.Multistream(true)
		defer zr.Close()
		src = gzipErrReader{zr}
	}
	lr := &limitReader{r: src, limit: traceByteLimit}
	p := newParser(name, lr, newGuard(lr))
	if err := p.run(); err != nil {
		return nil, err
	}
	if p.nKernels == 0 {
		return nil, fmt.Errorf("%s: no GPU kernels: record with ProfilerActivity.CUDA (%d traceEvents, none of cat \"kernel\")", name, p.t.Events)
	}
	p.link()
	p.infer()
	return p.finish(), nil
}

// errTooLarge is limitReader's error past its limit.
var errTooLarge = errors.New("too large")

// limitReader counts the bytes read and fails past limit.
type limitReader struct {
	r     io.Reader
	n     int64
	limit int64
}

func (l *limitReader) Read(b []byte) (int, error) {
	if l.n > l.limit {
		return 0, errTooLarge
	}
	if room := l.limit + 1 - l.n; int64(len(b)) > room {
		b = b[:room]
	}
	n, err := l.r.Read(b)
	l.n += int64(n)
	if l.n > l.limit {
		return n, errTooLarge
	}
	return n, err
}

// gzipError is an error of the gzip stream (not of the JSON in it).
type gzipError struct{ err error }

func (e *gzipError) Error() string { return e.err.Error() }
func (e *gzipError) Unwrap() error { return e.err }

// gzipErrReader marks the gzip reader's errors as gzipError.
type gzipErrReader struct{ r io.Reader }

func (g gzipErrReader) Read(b []byte) (int, error) {
	n, err := g.r.Read(b)
	if err != nil && err != io.EOF {
		err = &gzipError{err}
	}
	return n, err
}

// jstr is a JSON string; any other value reads as "" with ok false.
type jstr struct {
	s  string
	ok bool
}

func (j *jstr) UnmarshalJSON(b []byte) error {
	if len(b) >= 2 && b[0] == '"' {
		if bytes.IndexByte(b, '\\') < 0 {
			j.s, j.ok = string(b[1:len(b)-1]), true
		} else if json.Unmarshal(b, &j.s) == nil {
			j.ok = true
		}
	}
	return nil
}

// jnum is a JSON number, or a string holding one, kept as its text; any
// other value reads with ok false.
type jnum struct {
	s  string
	ok bool
}

func (j *jnum) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) > 0 && (b[0] == '-' || b[0] >= '0' && b[0] <= '9'):
		j.s, j.ok = string(b), true
	case len(b) >= 2 && b[0] == '"':
		var s string
		if json.Unmarshal(b, &s) == nil {
			j.s, j.ok = strings.TrimSpace(s), true
		}
	}
	return nil
}

// float parses the number.
func (j jnum) float() (float64, bool) {
	if !j.ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(j.s, 64)
	return f, err == nil
}

// int parses an integral number in int64 range.
func (j jnum) int() (int64, bool) {
	if !j.ok {
		return 0, false
	}
	if v, err := strconv.ParseInt(j.s, 10, 64); err == nil {
		return v, true
	}
	f, err := strconv.ParseFloat(j.s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<62 {
		return 0, false
	}
	return int64(f), true
}

// nanos parses a time in microseconds (Kineto's unit, with up to three
// decimals) into integer nanoseconds, exactly for plain decimals (ts of 16
// digits lose nothing).
func (j jnum) nanos() (int64, bool) {
	if !j.ok {
		return 0, false
	}
	s := j.s
	if strings.ContainsAny(s, "eE") {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || !(math.Abs(f) <= 9e15) {
			return 0, false
		}
		return int64(math.Round(f * 1000)), true
	}
	ip, frac, _ := strings.Cut(s, ".")
	neg := strings.HasPrefix(ip, "-")
	ip = strings.TrimPrefix(ip, "-")
	if ip == "" && frac == "" {
		return 0, false
	}
	var v int64
	if ip != "" {
		var err error
		if v, err = strconv.ParseInt(ip, 10, 64); err != nil || v > 9e15 || ip[0] == '+' {
			return 0, false
		}
	}
	v *= 1000
	var f int64
	for i := range frac {
		c := frac[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		switch {
		case i < 3:
			f = 10*f + int64(c-'0')
		case i == 3 && c >= '5':
			f++
		}
	}
	for i := len(frac); i < 3; i++ {
		f *= 10
	}
	v += f
	if neg {
		v = -v
	}
	return v, true
}

// jid is a pid or tid: a number or a string, kept as text.
type jid struct{ s string }

func (j *jid) UnmarshalJSON(b []byte) error {
	if len(b) > 64 {
		b = b[:64]
	}
	j.s = string(b)
	return nil
}

// jdim3 is a grid or block: up to three non-negative integers.
type jdim3 struct{ v [3]int }

func (d *jdim3) UnmarshalJSON(b []byte) error {
	var v []float64
	if json.Unmarshal(b, &v) != nil {
		return nil
	}
	for i := 0; i < 3 && i < len(v); i++ {
		if v[i] >= 0 && v[i] <= 1<<31 && v[i] == math.Trunc(v[i]) {
			d.v[i] = int(v[i])
		}
	}
	return nil
}

// rawArgs is the part of an event's args Read uses.
type rawArgs struct {
	ExternalID  jnum            `json:"External id"`
	Correlation jnum            `json:"correlation"`
	Device      jnum            `json:"device"`
	Stream      jnum            `json:"stream"`
	Grid        jdim3           `json:"grid"`
	Block       jdim3           `json:"block"`
	InputDims   json.RawMessage `json:"Input Dims"`
	InputType   json.RawMessage `json:"Input type"`
	Concrete    json.RawMessage `json:"Concrete Inputs"`
	SeqNr       jnum            `json:"Sequence number"`
	CollName    jstr            `json:"Collective name"`
	InNelems    jnum            `json:"In msg nelems"`
	OutNelems   jnum            `json:"Out msg nelems"`
	GroupSize   jnum            `json:"Group size"`
	DType       jstr            `json:"dtype"`
	Bytes       jnum            `json:"bytes"`
}

// rawEvent is the part of a trace event Read uses.
type rawEvent struct {
	Ph   jstr    `json:"ph"`
	Cat  jstr    `json:"cat"`
	Name jstr    `json:"name"`
	Pid  jid     `json:"pid"`
	Tid  jid     `json:"tid"`
	Ts   jnum    `json:"ts"`
	Dur  jnum    `json:"dur"`
	Args rawArgs `json:"args"`
}

// rawDevice is one deviceProperties entry.
type rawDevice struct {
	ID             jnum `json:"id"`
	Name           jstr `json:"name"`
	TotalGlobalMem jnum `json:"totalGlobalMem"`
	NumSms         jnum `json:"numSms"`
	ComputeMajor   jnum `json:"computeMajor"`
	ComputeMinor   jnum `json:"computeMinor"`
}

// commInfo is a collective's recorded parameters.
type commInfo struct {
	name               string
	inNelems, outNelem int64
	groupSize          int64
	dtype              string
}

// input is one recorded op input: a tensor's dims (tensor true), or a list
// of tensors (list true), or neither (a scalar, None, ...); dtype is its
// Input type.
type input struct {
	dims   []int64
	tensor bool
	list   bool
	dtype  string
}

// opInfo is what an op recorded about its inputs.
type opInfo struct {
	inputs   []input
	concrete []string
	comm     *commInfo
}

// cpuOp is one cpu_op or user annotation, times in nanoseconds.
type cpuOp struct {
	name       string
	thread     int32
	start, end int64
	ext, seq   int64
	info       int32
	parent     int32
	kernels    int32
}

// rtEvent is a cuda_runtime launch.
type rtEvent struct {
	corr       int64
	thread     int32
	start, end int64
	ext        int64
}

// rawKernel is a GPU event before linking.
type rawKernel struct {
	name           string
	cat            Class // ClassUnknown for a kernel, ClassMemcpy, ClassMemset
	start          int64 // ns
	micros         float64
	durMicros      float64
	device, stream int
	grid, block    [3]int
	ext, corr      int64
	comm           *commInfo
	bytes          int64
	op             int32
}

// parser holds Read's state.
type parser struct {
	name string
	lr   *limitReader
	dec  *json.Decoder
	t    *Trace
	strs map[string]string
	// nameBytes are the distinct interned strings' bytes; kept the
	// memory of the events kept (MaxTraceKeptBytes).
	nameBytes int
	kept      int64
	threads   map[string]int32
	ops       []cpuOp
	infos     []opInfo
	runtimes  []rtEvent // by correlation once link sorts them
	kernels   []rawKernel
	nKernels  int
	steps     map[int64]bool
	gpuSteps  map[int64]bool
	// fractional is set once an op's ts or dur has a fractional part:
	// nesting is then exact, else it allows one microsecond of truncation.
	fractional bool
	// filled by link and infer
	order     []int32
	byThread  map[int32][2]int
	byExt     []int32 // op indices with an External id, by it
	seqFwd    map[int64]int32
	names     map[string]nameInfo
	slackNano int64
	out       []Kernel
}

func newParser(name string, lr *limitReader, g *guard) *parser {
	return &parser{name: name, lr: lr, dec: json.NewDecoder(g), t: &Trace{Name: name, WorldSize: 1},
		strs: map[string]string{}, threads: map[string]int32{},
		steps: map[int64]bool{}, gpuSteps: map[int64]bool{}}
}

// What Read keeps of an event, in bytes (MaxTraceKeptBytes): a GPU event's
// raw record and its Kernel, an op's record (its recorded inputs count apart,
// keptInputBytes each plus 8 a dimension), a launch's record.
const (
	keptKernelBytes = int64(unsafe.Sizeof(rawKernel{}) + unsafe.Sizeof(Kernel{}))
	keptOpBytes     = int64(unsafe.Sizeof(cpuOp{}))
	keptInfoBytes   = int64(unsafe.Sizeof(opInfo{}))
	keptInputBytes  = int64(unsafe.Sizeof(input{}))
	keptLaunchBytes = int64(unsafe.Sizeof(rtEvent{}))
	// keptMapEntryBytes is a map entry's own cost (a thread's or a profiler
	// step's), its key's bytes apart.
	keptMapEntryBytes = 48
)

// keep counts n bytes more of kept events against MaxTraceKeptBytes.
func (p *parser) keep(n int64) error {
	if p.kept += n; p.kept > traceKeptLimit {
		return fmt.Errorf("%s: the events kept would take more than %d bytes (MaxTraceKeptBytes: %d a GPU kernel, %d an op and more for its recorded inputs, %d a launch): too large to read; profile fewer steps",
			p.name, traceKeptLimit, keptKernelBytes, keptOpBytes, keptLaunchBytes)
	}
	return nil
}

// intern returns one copy of every distinct string, cut to MaxNameBytes
// and made printable (badinput.PrintableLine), and counts the distinct
// strings' bytes against MaxNameTotalBytes.
func (p *parser) intern(s string) (string, error) {
	cut := len(s) > MaxNameBytes
	if cut {
		s = s[:MaxNameBytes]
	}
	if v, ok := p.strs[s]; ok {
		return v, nil
	}
	v := s
	if cut {
		v = strings.ToValidUTF8(v, "") + "…"
	}
	v = badinput.PrintableLine(v)
	p.nameBytes += len(s)
	if v != s {
		p.nameBytes += len(v)
	}
	if p.nameBytes > traceNameLimit {
		return "", fmt.Errorf("%s: more than %d bytes of distinct names (MaxNameTotalBytes): too large to read", p.name, traceNameLimit)
	}
	if cut {
		s = strings.Clone(s) // not a slice of the long name's string
	}
	p.strs[s] = v
	return v, nil
}

// thread numbers a (pid, tid) pair; a new one counts against
// MaxTraceKeptBytes.
func (p *parser) thread(pid, tid jid) (int32, error) {
	k := pid.s + "\x00" + tid.s
	if v, ok := p.threads[k]; ok {
		return v, nil
	}
	if err := p.keep(keptMapEntryBytes + int64(len(k))); err != nil {
		return 0, err
	}
	v := int32(len(p.threads))
	p.threads[k] = v
	return v, nil
}

// step records profiler step n in steps; a new one counts against
// MaxTraceKeptBytes.
func (p *parser) step(steps map[int64]bool, n int64) error {
	if steps[n] {
		return nil
	}
	if err := p.keep(keptMapEntryBytes); err != nil {
		return err
	}
	steps[n] = true
	return nil
}

// fail turns a decoding error into Read's error; where names the place.
func (p *parser) fail(err error, where string) error {
	var gz *gzipError
	var se *json.SyntaxError
	var ge *guardError
	switch {
	case errors.As(err, &ge):
		return fmt.Errorf("%s: %v", p.name, ge)
	case errors.Is(err, errTooLarge):
		return fmt.Errorf("%s: more than %d bytes of JSON (MaxTraceBytes): too large to read", p.name, p.lr.limit)
	case errors.As(err, &gz):
		return fmt.Errorf("%s: gzip stream broken after %d decompressed bytes, inside %s: %v (a truncated or corrupt .gz)", p.name, p.lr.n, where, gz.err)
	case err == io.EOF && p.lr.n == 0:
		return fmt.Errorf("%s: empty: not JSON", p.name)
	case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%s: truncated JSON: the JSON ends at byte %d, inside %s", p.name, p.lr.n, where)
	case errors.As(err, &se):
		if where == "" {
			return fmt.Errorf("%s: not JSON: %v (byte %d)", p.name, err, se.Offset)
		}
		return fmt.Errorf("%s: invalid JSON inside %s (from byte %d): %v", p.name, where, p.dec.InputOffset(), err)
	}
	return fmt.Errorf("%s: %w", p.name, err)
}

// run reads the top-level object.
func (p *parser) run() error {
	tok, err := p.dec.Token()
	if err != nil {
		return p.fail(err, "")
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		what := fmt.Sprintf("%T", tok)
		switch tok.(type) {
		case json.Delim:
			what = "an array"
		case string:
			what = "a string"
		case float64, json.Number:
			what = "a number"
		case bool:
			what = "a boolean"
		case nil:
			what = "null"
		}
		return fmt.Errorf("%s: not a PyTorch profiler trace: the JSON is %s, not an object with traceEvents", p.name, what)
	}
	sawEvents := false
	for p.dec.More() {
		tok, err := p.dec.Token()
		if err != nil {
			return p.fail(err, "the top-level object")
		}
		key, _ := tok.(string)
		switch key {
		case "traceEvents":
			sawEvents = true
			if err := p.events(); err != nil {
				return err
			}
		case "deviceProperties":
			if err := p.devices(); err != nil {
				return err
			}
		case "distributedInfo":
			var di struct {
				Rank      jnum `json:"rank"`
				WorldSize jnum `json:"world_size"`
				Backend   jstr `json:"backend"`
			}
			if err := p.dec.Decode(&di); err != nil && !isTypeError(err) {
				return p.fail(err, "distributedInfo")
			}
			if v, ok := di.Rank.int(); ok && v >= 0 && v < 1<<31 {
				p.t.Rank = int(v)
			}
			if v, ok := di.WorldSize.int(); ok && v >= 1 && v < 1<<31 {
				p.t.WorldSize = int(v)
			}
			p.t.Backend = badinput.PrintableLine(short(di.Backend.s, MaxNameBytes))
		default:
			if err := p.skip(); err != nil {
				return p.fail(err, fmt.Sprintf("%q", short(key, 40)))
			}
		}
	}
	if _, err := p.dec.Token(); err != nil {
		return p.fail(err, "the top-level object")
	}
	if !sawEvents {
		return fmt.Errorf("%s: not a PyTorch profiler trace: no traceEvents", p.name)
	}
	return nil
}

// devices reads deviceProperties one entry at a time, at most
// MaxTraceDevices of them; any other value is skipped.
func (p *parser) devices() error {
	tok, err := p.dec.Token()
	if err != nil {
		return p.fail(err, "deviceProperties")
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		if ok { // an object: skip the rest of it
			if err := p.skipOpen(1); err != nil {
				return p.fail(err, "deviceProperties")
			}
		}
		return nil
	}
	for i := 0; p.dec.More(); i++ {
		if i >= MaxTraceDevices {
			return fmt.Errorf("%s: more than %d deviceProperties entries (MaxTraceDevices): too large to read", p.name, MaxTraceDevices)
		}
		var d rawDevice
		if err := p.dec.Decode(&d); err != nil && !isTypeError(err) {
			return p.fail(err, fmt.Sprintf("deviceProperties[%d]", i))
		}
		p.t.Devices = append(p.t.Devices, Device{ID: int(intOr(d.ID, 0)), Name: badinput.PrintableLine(short(d.Name.s, MaxNameBytes)),
			TotalGlobalMemBytes: intOr(d.TotalGlobalMem, 0), SMs: int(intOr(d.NumSms, 0)),
			ComputeMajor: int(intOr(d.ComputeMajor, 0)), ComputeMinor: int(intOr(d.ComputeMinor, 0))})
	}
	if _, err := p.dec.Token(); err != nil {
		return p.fail(err, "deviceProperties")
	}
	return nil
}

func isTypeError(err error) bool {
	var te *json.UnmarshalTypeError
	return errors.As(err, &te)
}

func intOr(j jnum, def int64) int64 {
	if v, ok := j.int(); ok && v >= 0 {
		return v
	}
	return def
}

// skip consumes one JSON value token by token.
func (p *parser) skip() error {
	tok, err := p.dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); ok && (d == '{' || d == '[') {
		return p.skipOpen(1)
	}
	return nil
}

// skipOpen consumes tokens until depth open arrays and objects are closed.
func (p *parser) skipOpen(depth int) error {
	for depth > 0 {
		tok, err := p.dec.Token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
	}
	return nil
}

// events reads the traceEvents array, one event at a time.
func (p *parser) events() error {
	tok, err := p.dec.Token()
	if err != nil {
		return p.fail(err, "traceEvents")
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return fmt.Errorf("%s: not a PyTorch profiler trace: traceEvents is not an array", p.name)
	}
	for i := 0; p.dec.More(); i++ {
		if p.t.Events >= traceEventLimit {
			return fmt.Errorf("%s: more than %d traceEvents (MaxTraceEvents): too large to read", p.name, traceEventLimit)
		}
		off := p.dec.InputOffset()
		var ev rawEvent
		if err := p.dec.Decode(&ev); err != nil && !isTypeError(err) {
			return p.fail(err, fmt.Sprintf("traceEvents[%d]", i))
		}
		p.t.Events++
		if err := p.event(&ev, i, off); err != nil {
			return err
		}
	}
	if _, err := p.dec.Token(); err != nil {
		return p.fail(err, "traceEvents")
	}
	return nil
}

// short cuts s to n bytes for messages.
func short(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// event keeps what Read needs of one event.
func (p *parser) event(ev *rawEvent, i int, off int64) error {
	if ev.Ph.s != "X" {
		return nil
	}
	switch cat := strings.ToLower(ev.Cat.s); cat {
	case "kernel":
		return p.gpuEvent(ev, ClassUnknown, i, off)
	case "gpu_memcpy", "memcpy":
		return p.gpuEvent(ev, ClassMemcpy, i, off)
	case "gpu_memset", "memset":
		return p.gpuEvent(ev, ClassMemset, i, off)
	case "cpu_op", "operator", "user_annotation":
		return p.cpuOp(ev, cat == "user_annotation")
	case "cuda_runtime", "runtime", "cuda_driver":
		return p.runtime(ev)
	case "gpu_user_annotation":
		if n, ok := profilerStep(ev.Name.s); ok {
			return p.step(p.gpuSteps, n)
		}
	}
	return nil
}

// profilerStep reads N of "ProfilerStep#N".
func profilerStep(name string) (int64, bool) {
	s, ok := strings.CutPrefix(name, "ProfilerStep#")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// gpuEvent checks and keeps a kernel, memcpy or memset.
func (p *parser) gpuEvent(ev *rawEvent, cat Class, i int, off int64) error {
	what := "kernel"
	switch cat {
	case ClassMemcpy:
		what = "memcpy"
	case ClassMemset:
		what = "memset"
	}
	where := func() string {
		return fmt.Sprintf("%s: traceEvents[%d] (byte %d): %s %q", p.name, i, off, what, short(ev.Name.s, 80))
	}
	start, ok := ev.Ts.nanos()
	if !ok {
		return fmt.Errorf("%s: ts %q: not a number of microseconds", where(), short(ev.Ts.s, 40))
	}
	if !ev.Dur.ok {
		return fmt.Errorf("%s: no dur", where())
	}
	dur, ok := ev.Dur.float()
	switch {
	case !ok || math.IsNaN(dur):
		return fmt.Errorf("%s: dur %q: not a number", where(), short(ev.Dur.s, 40))
	case dur < 0:
		return fmt.Errorf("%s: dur %v: negative", where(), dur)
	case dur > MaxKernelMicros:
		return fmt.Errorf("%s: dur %v µs is over an hour: not a kernel timed in microseconds", where(), dur)
	}
	a := &ev.Args
	if err := p.keep(keptKernelBytes); err != nil {
		return err
	}
	kname, err := p.intern(ev.Name.s)
	if err != nil {
		return err
	}
	k := rawKernel{name: kname, cat: cat, start: start, durMicros: dur, op: -1,
		grid: a.Grid.v, block: a.Block.v, ext: -1, corr: -1}
	k.micros, _ = ev.Ts.float()
	if v, ok := a.Device.int(); ok && v >= 0 && v < 1<<20 {
		k.device = int(v)
	}
	if v, ok := a.Stream.int(); ok && v >= 0 && v < 1<<31 {
		k.stream = int(v)
	}
	if v, ok := a.ExternalID.int(); ok {
		k.ext = v
	}
	if v, ok := a.Correlation.int(); ok {
		k.corr = v
	}
	if v, ok := a.Bytes.int(); ok && v > 0 {
		k.bytes = v
	}
	if k.comm, err = p.comm(a); err != nil {
		return err
	}
	p.kernels = append(p.kernels, k)
	if cat == ClassUnknown {
		p.nKernels++
	}
	return nil
}

// comm reads a collective's recorded parameters, nil when there are none.
func (p *parser) comm(a *rawArgs) (*commInfo, error) {
	if !a.CollName.ok {
		return nil, nil
	}
	name, err := p.intern(a.CollName.s)
	if err != nil {
		return nil, err
	}
	dtype, err := p.intern(a.DType.s)
	if err != nil {
		return nil, err
	}
	if err := p.keep(int64(unsafe.Sizeof(commInfo{}))); err != nil {
		return nil, err
	}
	c := &commInfo{name: name, dtype: dtype}
	c.inNelems = intOr(a.InNelems, 0)
	c.outNelem = intOr(a.OutNelems, 0)
	c.groupSize = intOr(a.GroupSize, 0)
	return c, nil
}

// cpuOp keeps an op or annotation with what it recorded.
func (p *parser) cpuOp(ev *rawEvent, annotation bool) error {
	start, ok := ev.Ts.nanos()
	if !ok {
		return nil
	}
	dur, ok := ev.Dur.float()
	if !ok || !(dur >= 0) || dur > 1e12 {
		return nil
	}
	if !p.fractional && (hasFraction(ev.Ts.s) || hasFraction(ev.Dur.s)) {
		p.fractional = true
	}
	name := ev.Name.s
	if annotation {
		if n, ok := profilerStep(name); ok {
			if err := p.step(p.steps, n); err != nil {
				return err
			}
		}
	}
	a := &ev.Args
	if err := p.keep(keptOpBytes); err != nil {
		return err
	}
	oname, err := p.intern(name)
	if err != nil {
		return err
	}
	thread, err := p.thread(ev.Pid, ev.Tid)
	if err != nil {
		return err
	}
	op := cpuOp{name: oname, thread: thread, start: start, end: start + int64(math.Round(dur*1000)),
		ext: -1, seq: -1, info: -1, parent: -1}
	if v, ok := a.ExternalID.int(); ok {
		op.ext = v
	}
	_, attention := attnOps[name]
	if v, ok := a.SeqNr.int(); ok && (attention || strings.Contains(name, "Backward")) {
		op.seq = v
	}
	var info opInfo
	if len(a.InputDims) > 0 && !viewOps[name] {
		info.inputs = readInputs(a.InputDims, a.InputType)
		if attention && len(a.Concrete) > 0 {
			var c []string
			if json.Unmarshal(a.Concrete, &c) == nil && len(c) <= maxOpInputs {
				for i := range c {
					if c[i], err = p.intern(c[i]); err != nil {
						return err
					}
				}
				info.concrete = c
			}
		}
	}
	if info.comm, err = p.comm(a); err != nil {
		return err
	}
	if info.inputs != nil || info.comm != nil {
		n := keptInfoBytes + keptInputBytes*int64(len(info.inputs))
		for _, in := range info.inputs {
			n += 8 * int64(len(in.dims))
		}
		n += 16 * int64(len(info.concrete))
		if err := p.keep(n); err != nil {
			return err
		}
		for i := range info.inputs {
			if info.inputs[i].dtype, err = p.intern(info.inputs[i].dtype); err != nil {
				return err
			}
		}
		op.info = int32(len(p.infos))
		p.infos = append(p.infos, info)
	}
	p.ops = append(p.ops, op)
	return nil
}

// viewOps launch no kernels (views, allocations, metadata): their recorded
// inputs are not kept, which saves memory on traces of millions of ops.
var viewOps = map[string]bool{
	"aten::view": true, "aten::reshape": true, "aten::_reshape_alias": true, "aten::as_strided": true,
	"aten::empty": true, "aten::empty_strided": true, "aten::empty_like": true, "aten::t": true,
	"aten::transpose": true, "aten::permute": true, "aten::expand": true, "aten::slice": true,
	"aten::select": true, "aten::unsqueeze": true, "aten::squeeze": true, "aten::detach": true,
	"aten::detach_": true, "aten::alias": true, "aten::_unsafe_view": true, "aten::resolve_conj": true,
	"aten::resolve_neg": true, "aten::lift_fresh": true, "aten::split": true, "aten::chunk": true,
	"aten::narrow": true, "aten::unbind": true, "aten::split_with_sizes": true, "aten::numpy_T": true,
	"aten::contiguous": true, "aten::flatten": true, "aten::unflatten": true, "aten::set_": true,
	"aten::is_nonzero": true, "aten::item": true, "aten::_local_scalar_dense": true,
}

// hasFraction reports whether a decimal has a non-zero fractional part.
func hasFraction(s string) bool {
	_, f, ok := strings.Cut(s, ".")
	return ok && strings.Trim(f, "0") != ""
}

// readInputs reads Input Dims and Input type; nil when they are not lists.
func readInputs(dims, types json.RawMessage) []input {
	var ds []json.RawMessage
	if json.Unmarshal(dims, &ds) != nil || len(ds) == 0 || len(ds) > maxOpInputs {
		return nil
	}
	var ts []string
	if json.Unmarshal(types, &ts) != nil {
		ts = nil
	}
	in := make([]input, len(ds))
	for i, d := range ds {
		if i < len(ts) {
			in[i].dtype = ts[i]
		}
		var v []int64
		if t := in[i].dtype; strings.HasSuffix(t, "List") {
			in[i].list = true // TensorList, GenericList, ScalarList: no per-element dims
		} else if json.Unmarshal(d, &v) == nil && len(v) <= 16 {
			if v == nil {
				v = []int64{}
			}
			in[i].dims, in[i].tensor = v, true
		} else if t := bytes.TrimSpace(d); len(t) > 0 && t[0] == '[' {
			in[i].list = true
		}
	}
	return in
}

// runtime keeps a launch's thread, time and External id by correlation.
func (p *parser) runtime(ev *rawEvent) error {
	name := ev.Name.s
	if !strings.Contains(name, "Launch") && !strings.Contains(name, "Memcpy") && !strings.Contains(name, "Memset") &&
		!strings.Contains(name, "launch") {
		return nil
	}
	corr, ok := ev.Args.Correlation.int()
	if !ok || corr <= 0 {
		return nil
	}
	start, ok := ev.Ts.nanos()
	if !ok {
		return nil
	}
	end := start
	if d, ok := ev.Dur.float(); ok && d > 0 && d < 1e12 {
		end += int64(math.Round(d * 1000))
	}
	ext, ok := ev.Args.ExternalID.int()
	if !ok {
		ext = -1
	}
	if err := p.keep(keptLaunchBytes); err != nil {
		return err
	}
	thread, err := p.thread(ev.Pid, ev.Tid)
	if err != nil {
		return err
	}
	p.runtimes = append(p.runtimes, rtEvent{corr: corr, thread: thread, start: start, end: end, ext: ext})
	return nil
}

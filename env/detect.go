package env

import (
	"bytes"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits that keep a Detector's memory bounded however long the input.
const (
	// MaxGPUs is the most GPUs an Environment built by a Detector lists.
	MaxGPUs = 64
	// MaxPackages is the most packages a Detector records.
	MaxPackages = 2000
	// maxLineLen is how much of a line is examined; environment lines are short.
	maxLineLen = 8 << 10
	maxTextLen = 160 // longest name, OS description or source kept
	maxCSVCols = 32
)

type mode int

const (
	modeNone        mode = iota
	modeSMIMemory        // the line after an nvidia-smi GPU row: its memory
	modeCollectGPUs      // collect_env "GPU models and configuration:" list
	modeCuDNNList        // collect_env "cuDNN version: Probably one of the following:"
	modePipHeader        // after "Package Version", before the dashes
	modePipTable         // pip list rows
	modeConda            // conda list rows
	modeCSV              // nvidia-smi --format=csv rows
)

// Detector gathers the environment from lines fed one at a time, as a log
// is scanned. It costs a few substring tests on a line that says nothing
// about the environment, and its memory is bounded (MaxGPUs, MaxPackages,
// short strings) however many lines it sees. The first value a log gives
// for a field wins: a log is one run. A Detector is not safe for
// concurrent use.
type Detector struct {
	env  Environment // read from explicit statements
	weak Environment // hints (a path, a DLL name) used only where env lacks a field

	mode       mode
	smiGPU     int // index into env.GPUs of the nvidia-smi row awaiting its memory line
	csvCols    []string
	csvUnits   []string
	csvRow     int
	condaTorch string // build string of conda's pytorch, for the CUDA it targets

	atFile string // LineAt's position, formatted only when a value is kept
	atLine int
}

// lazyWhere stands for "the position LineAt was given".
const lazyWhere = "\x00"

// LineAt is Line for a scanner that knows the file and line number: the
// "file:line" source is only formatted when the line sets a value, so
// lines that say nothing cost no allocation.
func (d *Detector) LineAt(line []byte, file string, n int) {
	d.atFile, d.atLine = file, n
	d.Line(line, lazyWhere)
	// Forget the position, so that a line that sets nothing leaves the
	// Detector exactly as it was (see GateLiterals).
	d.atFile, d.atLine = "", 0
}

func (d *Detector) where(w string) string {
	if w != lazyWhere {
		return w
	}
	if d.atFile == "" {
		return "line " + strconv.Itoa(d.atLine)
	}
	return d.atFile + ":" + strconv.Itoa(d.atLine)
}

// NewDetector returns a Detector that knows nothing yet.
func NewDetector() *Detector {
	return &Detector{smiGPU: -1}
}

// Env returns what the lines seen so far say. Package lists fill Torch,
// cuDNN, NCCL and Python when nothing stated them; the CUDA of a torch
// build is read from its "+cu121" label when not printed. The result is a
// copy the caller may change.
func (d *Detector) Env() Environment {
	e := d.env.clone()
	fillFromPackages(&e)
	e.Merge(d.weak)
	if e.TorchCUDA == "" && d.condaTorch != "" {
		if v := cudaFromBuild(d.condaTorch); v != "" {
			setSource(&e, "torch_cuda", v, e.Sources["packages.torch"])
		}
	}
	return e
}

// fillFromPackages fills fields a package list implies when nothing
// stated them, and the torch build's CUDA from its local version label.
func fillFromPackages(e *Environment) {
	src := func(name string) string { return e.Sources["packages."+name] }
	if e.Torch == "" {
		if v := e.Packages["torch"]; v != "" {
			setSource(e, "torch", v, src("torch"))
		}
	}
	if e.Python == "" {
		if v := e.Packages["python"]; v != "" {
			setSource(e, "python", v, src("python"))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(e.Packages)) {
		switch {
		case e.CUDNN == "" && (name == "cudnn" || strings.HasPrefix(name, "nvidia-cudnn-cu")):
			setSource(e, "cudnn", firstParts(e.Packages[name], 3), src(name))
		case e.NCCL == "" && (name == "nccl" || strings.HasPrefix(name, "nvidia-nccl-cu")):
			setSource(e, "nccl", firstParts(e.Packages[name], 3), src(name))
		}
	}
	if e.TorchCUDA == "" && e.Torch != "" {
		if v := cudaFromLocal(e.Torch); v != "" {
			setSource(e, "torch_cuda", v, e.Sources["torch"])
		}
	}
}

// setSource sets field key of e to v (which must be unset) and records src.
func setSource(e *Environment, key, v, src string) {
	*e.field(key) = v
	if src != "" {
		if e.Sources == nil {
			e.Sources = map[string]string{}
		}
		e.Sources[key] = src
	}
}

// set records v as field key unless the field is already known.
func (d *Detector) set(key, v, where string) { setField(&d.env, key, v, d.where(where)) }

// hint records v as a weak value of field key.
func (d *Detector) hint(key, v, where string) { setField(&d.weak, key, v, d.where(where)) }

func setField(e *Environment, key, v, where string) {
	p := e.field(key)
	if p == nil || *p != "" || v == "" {
		return
	}
	setSource(e, key, clean(v), clean(where))
}

// clean makes text safe to keep: valid UTF-8, no control characters, short.
func clean(s string) string {
	s = strings.TrimSpace(strings.ToValidUTF8(s, ""))
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return -1
		}
		return r
	}, s)
	if len(s) > maxTextLen {
		s = s[:maxTextLen]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return s
}

// addPackage records name==version unless the name is known or the list
// is full.
func (d *Detector) addPackage(name, version, where string) {
	name = normalizePackage(name)
	if name == "" || version == "" || len(name) > 100 || len(version) > 64 {
		return
	}
	if _, ok := d.env.Packages[name]; ok || len(d.env.Packages) >= MaxPackages {
		return
	}
	if d.env.Packages == nil {
		d.env.Packages = map[string]string{}
	}
	d.env.Packages[name] = clean(version)
	if d.env.Sources == nil {
		d.env.Sources = map[string]string{}
	}
	d.env.Sources["packages."+name] = clean(d.where(where))
}

// addGPU records g, or fills the gaps of the GPU with the same index
// already listed. It returns g's position in the list, or -1.
func addGPU(e *Environment, g GPU, where string) int {
	g.Name = clean(g.Name)
	for i := range e.GPUs {
		o := &e.GPUs[i]
		if o.Index != g.Index {
			continue
		}
		if o.Name == "" {
			o.Name = g.Name
		}
		if o.MemoryBytes == 0 {
			o.MemoryBytes = g.MemoryBytes
		}
		if o.BusID == "" {
			o.BusID = g.BusID
		}
		if o.Capability == "" {
			o.Capability = g.Capability
		}
		return i
	}
	if len(e.GPUs) >= MaxGPUs {
		return -1
	}
	e.GPUs = append(e.GPUs, g)
	if e.Sources == nil {
		e.Sources = map[string]string{}
	}
	if _, ok := e.Sources["gpus"]; !ok {
		e.Sources["gpus"] = clean(where)
	}
	return len(e.GPUs) - 1
}

// Literal tokens tested before any regular expression runs. Each is
// either a gate literal (GateLiterals holds it, or a piece of it) or a
// cheap pre-test for a rule whose longer gate literals gate.go lists, as
// the comment beside it says.
var (
	tokErsion       = []byte("ersion") // Version, version; gate: versionLine's tokens, keyedToks
	tokDriverVer    = []byte("Driver Version")
	tokCuDNNVer     = []byte("cuDNN version")
	tokMismatchVer  = []byte("mismatches the version")
	tokCompTools    = []byte("compilation tools")
	tokGPU          = []byte("GPU ") // gate: tokGPUConfig, tokUUID, ": "+gpuMakers
	tokGPUConfig    = []byte("GPU models and configuration:")
	tokUUID         = []byte("(UUID: ") // nvidia-smi -L's, in gpuListRE: for the gate
	tokFreeze       = []byte("==")
	tokConda        = []byte("[conda]")
	tokPackage      = []byte("Package") // at the start of the line: GateStart
	tokCondaHeader  = []byte("# packages in environment")
	tokComma        = []byte(", ") // gate: csvHeaderToks, tokIndexName; GateStart for a bare row
	tokIndexName    = []byte("index, name")
	tokOS           = []byte("OS:")
	tokPyPlatform   = []byte("Python platform:")
	tokDrive        = []byte(`:\`)
	tokPyDir        = []byte("python3.") // pyPathRE: a versioned python3.N directory
	tokDistPackages = []byte("/dist-packages")
	tokLinuxGNU     = []byte("linux-gnu")
	tokNVRM         = []byte("NVRM: ")
	tokNVRMVersion  = []byte("NVRM version:")
	tokLinuxVersion = []byte("Linux version ")
	tokCapSM        = []byte("capability sm_")
	tokComputeCap   = []byte("compute capability:")
	tokTorch        = []byte("torch") // gate: "torch" then ':' or white space
	tokPyTorch      = []byte("pytorch")
	tokPython       = []byte("Python 3.")
)

// keyedToks: keyed runs only on a line where "version" or "Version"
// follows ' ', '_' or '-' (".__version__" holds "_version"), as keyedRE
// needs; so the gate has these 8-byte literals rather than "ersion".
var keyedToks = [][]byte{[]byte(" version"), []byte(" Version"), []byte("_version"),
	[]byte("_Version"), []byte("-version"), []byte("-Version")}

// csvHeaderToks: csvLine takes a line as an nvidia-smi --format=csv header
// only if it holds one of them or starts with tokIndexName.
var csvHeaderToks = [][]byte{[]byte("memory.total"), []byte("pci.bus_id"),
	[]byte("driver_version"), []byte("compute_cap")}

func containsAny(line []byte, toks [][]byte) bool {
	for _, t := range toks {
		if bytes.Contains(line, t) {
			return true
		}
	}
	return false
}

// A lineRule reads one field from a line that contains tok: the first
// group of re, through conv where there is one. The literal test comes
// first, so re runs only on the few lines that can match.
type lineRule struct {
	tok   []byte
	re    *regexp.Regexp
	field string
	conv  func(string) string // nil: the text as matched
	strip bool                // match re against the line without its log prefixes
}

// applyRules tries rules in order; as set keeps the first value, an
// earlier rule wins over a later one for the same field. stripped is the
// line without its log prefixes, or nil to compute it only if a strip
// rule's token is found.
func (d *Detector) applyRules(rules []lineRule, line, stripped []byte, where string) {
	for i := range rules {
		r := &rules[i]
		if !bytes.Contains(line, r.tok) {
			continue
		}
		in := line
		if r.strip {
			if stripped == nil {
				stripped = stripPrefix(line)
			}
			in = stripped
		}
		if m := r.re.FindSubmatch(in); m != nil {
			v := string(m[1])
			if r.conv != nil {
				v = r.conv(v)
			}
			d.set(r.field, v, where)
		}
	}
}

// lineRules are the single-field statements Line reads from any line.
var lineRules = []lineRule{
	{tok: []byte("Kernel Mod"), re: kernelModuleRE, field: "driver"},
	{tok: []byte("CUDA used to build PyTorch"), re: builtWithRE, field: "torch_cuda"},
	{tok: []byte("runtime CuDNN library"), re: tfCuDNNRE, field: "cudnn"},
	{tok: []byte("cudaDriverVersion"), re: ncclDriverRE, field: "driver_cuda", conv: cudaFromInt},
}

// versionRules are the single-field statements versionLine reads from a
// line that contains "version" or "Version".
var versionRules = []lineRule{
	{tok: []byte("CUDA Version"), re: smiQCUDARE, field: "driver_cuda", strip: true},
	{tok: []byte("CUDA runtime version:"), re: cudaRuntimeRE, field: "cuda"},
	{tok: []byte("river version:"), re: nvDriverRE, field: "driver"},
	{tok: []byte("NCCL version"), re: ncclRE, field: "nccl"},
	{tok: []byte("nccl.version()"), re: ncclTorchRE, field: "nccl", conv: versionFromCode},
	{tok: []byte("cudnn.version()"), re: cudnnTorchRE, field: "cudnn", conv: versionFromCode},
	{tok: []byte("torch.version.cuda"), re: torchCUDARE, field: "torch_cuda"},
	{tok: []byte("too old (found version"), re: driverOldRE, field: "driver_cuda", conv: cudaFromInt},
	{tok: []byte("driver's CUDA version"), re: jaxDriverRE, field: "driver_cuda"},
	{tok: []byte("Loaded cuDNN version"), re: loadedCuDNNRE, field: "cudnn", conv: versionFromCode},
}

// Line examines one line; where ("train.log:12") is recorded as the
// source of what it sets.
func (d *Detector) Line(line []byte, where string) {
	if len(line) > maxLineLen {
		line = line[:maxLineLen]
	}
	line = bytes.TrimRight(line, "\r\n")
	if d.mode != modeNone && d.modeLine(line, where) {
		return
	}
	if len(line) < 4 {
		return
	}
	if bytes.Contains(line, tokErsion) {
		d.versionLine(line, where)
	}
	d.applyRules(lineRules, line, nil, where)
	// Not a rule: nvcc's full version (V12.4.131, second group) wins over
	// its release (12.4). No rule sets cuda, so this may follow them.
	if bytes.Contains(line, tokCompTools) {
		if m := nvccRE.FindSubmatch(line); m != nil {
			d.set("cuda", string(first2(m[2], m[1])), where)
		}
	}
	if bytes.Contains(line, tokGPU) {
		d.gpuLine(line, where)
	}
	if t := bytes.TrimLeft(line, " \t"); len(t) > 0 && t[0] == '|' {
		d.smiRow(t, where)
	}
	if bytes.Contains(line, tokFreeze) {
		if m := freezeRE.FindSubmatch(stripPrefix(line)); m != nil {
			d.addPackage(string(m[1]), string(m[2]), where)
		}
	}
	if bytes.Contains(line, tokConda) {
		if i := bytes.Index(line, tokConda); i >= 0 {
			d.condaRow(bytes.TrimSpace(line[i+len(tokConda):]), where)
		}
	}
	if bytes.HasPrefix(line, tokPackage) && pipHeaderRE.Match(line) {
		d.mode = modePipHeader
		return
	}
	if bytes.Contains(line, tokCondaHeader) {
		d.mode = modeConda
		return
	}
	if bytes.Contains(line, tokComma) {
		d.csvLine(line, where)
	}
	if bytes.Contains(line, tokOS) || bytes.Contains(line, tokPyPlatform) {
		d.osLine(line, where)
	}
	d.hints(line, where)
	if bytes.Contains(line, tokCapSM) {
		if m := archWarnRE.FindSubmatch(stripPrefix(line)); m != nil {
			addGPU(&d.weak, GPU{Name: string(m[1]), Capability: smCapability(string(m[2]))}, d.where(where))
		}
	}
	if bytes.Contains(line, tokComputeCap) {
		if m := tfDeviceRE.FindSubmatch(line); m != nil {
			i, _ := strconv.Atoi(string(m[1]))
			addGPU(&d.env, GPU{Index: i, Name: string(m[2]), BusID: string(m[3]), Capability: string(m[4])}, d.where(where))
		}
	}
	if d.env.Torch == "" && bytes.Contains(line, tokTorch) {
		d.torchLine(line, where)
	}
	if d.env.Python == "" && bytes.Contains(line, tokPython) {
		if m := pythonBannerRE.FindSubmatch(stripPrefix(line)); m != nil {
			d.set("python", string(m[1]), where)
		}
	}
}

func first2(a, b []byte) []byte {
	if len(a) > 0 {
		return a
	}
	return b
}

// ver matches a version as tools print it: 2.1.0+cu121, 12.4.131,
// 535.104.05, 2.5.0a0+git1234, 2.8.0.dev20250528+cpu.
const ver = `\d+(?:\.\d+)+(?:(?:a|b|rc|\.?dev|\.?post)\d*)?(?:\+[0-9A-Za-z.]+)?`

var (
	// Keyed version statements: "PyTorch version: X", "torch.__version__ = X",
	// "Python version: X (main, ...)", "Tensorflow version (GPU?): X",
	// "cuDNN version: 8902".
	keyedRE     = regexp.MustCompile(`(?i)(?:^|[^\w.])(pytorch|torch|tensorflow|tf|jaxlib|jax|triton|python|cudnn|nccl)(?:\.__version__|[ _-]version)\s*(?:\([^)]{0,24}\))?\s*(?:[:=]|\bis\b)\s*['"]?v?(` + ver + `|\d{4,6}\b)`)
	torchCUDARE = regexp.MustCompile(`torch\.version\.cuda\s*[:=]?\s*['"]?(\d+\.\d+)`)
	builtWithRE = regexp.MustCompile(`CUDA used to build PyTorch:\s*(\d+\.\d+)`)
	// collect_env
	cudaRuntimeRE = regexp.MustCompile(`CUDA runtime version:\s*(\d+\.\d+(?:\.\d+)?)`)
	nvDriverRE    = regexp.MustCompile(`(?i)nvidia driver version:\s*(\d+\.\d+(?:\.\d+)?)`)
	cudnnKeyRE    = regexp.MustCompile(`^cuDNN version:\s*(.*)$`)
	// nvidia-smi: header line, -q layout, or the field alone
	driverVersionRE = regexp.MustCompile(`Driver Version\s*:\s*(\d+\.\d+(?:\.\d+)?)`)
	smiCUDARE       = regexp.MustCompile(`Driver Version\s*:\s*\S+\s+CUDA Version\s*:\s*(\d+\.\d+)`)
	smiQCUDARE      = regexp.MustCompile(`^\s*CUDA Version\s+:\s*(\d+\.\d+)\s*$`)
	// NCCL's INFO line and PyTorch's NCCL errors: "NCCL version 2.18.1+cuda12.1"
	ncclRE        = regexp.MustCompile(`NCCL version:?\s+v?(\d+\.\d+\.\d+)(?:\+cuda\d+\.\d+)?(?:[^\w.+]|$)`)
	ncclTorchRE   = regexp.MustCompile(`nccl\.version\(\)\s*[:=]?\s*(\(\s*\d+\s*,\s*\d+\s*,\s*\d+\s*\)|\d{4,6}\b)`)
	cudnnTorchRE  = regexp.MustCompile(`cudnn\.version\(\)\s*[:=]?\s*(\d{4,6})\b`)
	ncclDriverRE  = regexp.MustCompile(`NCCL INFO cudaDriverVersion (\d{4,6})\b`)
	driverOldRE   = regexp.MustCompile(`driver on your system is too old \(found version (\d{4,6})\)`)
	jaxDriverRE   = regexp.MustCompile(`driver's CUDA version is (\d+\.\d+)`)
	loadedCuDNNRE = regexp.MustCompile(`Loaded cuDNN version (\d{4,6})\b`)
	tfCuDNNRE     = regexp.MustCompile(`Loaded runtime CuDNN library: (\d+\.\d+\.\d+)`)
	// PyTorch: "cuDNN version incompatibility: PyTorch was compiled  against
	// (8, 9, 2) but found runtime version (8, 5, 0)", older "... but linked against 7005".
	cudnnMismatchRE = regexp.MustCompile(`cuDNN version (?:incompatibility|mismatch): .*?but (?:found runtime version|linked against) (\(\s*\d+\s*,\s*\d+\s*,\s*\d+\s*\)|\d{4,6})`)
	// torch.utils.cpp_extension
	extMismatchRE  = regexp.MustCompile(`detected CUDA version \((\d+\.\d+)\) mismatches the version that was used to compile\s+PyTorch \((\d+\.\d+)\)`)
	kernelModuleRE = regexp.MustCompile(`NVIDIA (?:UNIX (?:Open )?(?:[\w-]+ )?Kernel Module(?: for [\w-]+)?|Kernel Mode Setting Driver for UNIX platforms)\s+(\d+\.\d+(?:\.\d+)?)`)
	nvccRE         = regexp.MustCompile(`Cuda compilation tools, release (\d+\.\d+)(?:, V(\d+\.\d+\.\d+))?`)
	// "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)" (nvidia-smi -L, collect_env)
	gpuListRE = regexp.MustCompile(`^GPU (\d{1,3}): (.+?)(\s*\(UUID: [^)]*\))?\s*$`)
	// nvidia-smi table: "|   0  NVIDIA A100-SXM4-80GB  On  | 00000000:07:00.0 Off |"
	smiRowRE = regexp.MustCompile(`^\|\s+(\d{1,3})\s+(\S.*?)\s+(?:On|Off|WDDM|TCC|MCDM|N/A)\s*\|\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s+(?:On|Off|N/A)\s*\|`)
	smiMemRE = regexp.MustCompile(`^\|.*?\|\s*\d+MiB\s*/\s*(\d+)MiB\s*\|`)
	// pip list header, its rule, and a row
	pipHeaderRE = regexp.MustCompile(`^Package\s+Version(?:\s+\S.*)?$`)
	pipRuleRE   = regexp.MustCompile(`^-{3,}(?:\s+-{3,})+\s*$`)
	pipRowRE    = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._-]*)\s+(\d[0-9A-Za-z.+!_-]*)(?:\s+\S.*)?$`)
	// pip freeze: the whole line is name==version
	freezeRE = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==(\d[0-9A-Za-z.+!_-]*)\s*$`)
	condaRE  = regexp.MustCompile(`^([A-Za-z0-9_][A-Za-z0-9._-]*)\s+(\d[0-9A-Za-z.+!_-]*)\s+(\S+)(?:\s+(\S+))?\s*$`)
	// nvidia-smi --query-gpu=index,name,memory.total,pci.bus_id,driver_version[,compute_cap]
	// --format=csv,noheader: the order Collect asks for
	csvBareRE = regexp.MustCompile(`^(\d{1,3}), ([^,]+), (\d+)(?: MiB)?, ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]), (\d+\.\d+(?:\.\d+)?)(?:, (\d+\.\d+|\[N/A\]))?\s*$`)
	csvColRE  = regexp.MustCompile(`^([a-z_.]+)(?: \[([A-Za-z%]+)\])?$`)
	osKeyRE   = regexp.MustCompile(`^OS:\s*(.+?)\s*$`)
	pyPlatRE  = regexp.MustCompile(`Python platform:\s*(Linux|Windows|macOS|Darwin)-`)
	drivePath = regexp.MustCompile(`(?:^|[\s"'(=])[A-Za-z]:\\{1,2}[A-Za-z]`)
	pyPathRE  = regexp.MustCompile(`[/\\]python(3\.\d{1,2})[/\\](?:site|dist)-packages`)
	pyWinRE   = regexp.MustCompile(`\\Python3(\d{1,2})\\`)
	// torch's arch warning: "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible"
	archWarnRE = regexp.MustCompile(`^(?:.*UserWarning:\s*)?([A-Za-z][\w .()-]{1,80}?) with CUDA capability sm_(\d{2,3}) is not compatible`)
	// TensorFlow: "... -> device: 0, name: NVIDIA A100-SXM4-80GB, pci bus id: 0000:07:00.0, compute capability: 8.0"
	tfDeviceRE = regexp.MustCompile(`device: (\d{1,3}), name: ([^,]+), pci bus id: ([0-9A-Fa-f:.]+), compute capability: (\d+\.\d+)`)
	// "torch: 2.2.0", "torch 2.1.0+cu121" at the start of a line
	torchBareRE    = regexp.MustCompile(`^(?:py)?torch(?:\s*:\s*|\s+)(` + ver + `)\s*$`)
	torchColonRE   = regexp.MustCompile(`^(?:py)?torch\s*:\s*(` + ver + `)(?:\s|,|$)`)
	pythonBannerRE = regexp.MustCompile(`^Python (3\.\d+\.\d+)\s*$`)
	cudnnPathRE    = regexp.MustCompile(`libcudnn\.so\.(\d+\.\d+\.\d+)\b`)
	cudnnDLLRE     = regexp.MustCompile(`(?i)cudnn\w*64_(\d+)\.dll`)
	cudnnValueRE   = regexp.MustCompile(`^(\d+\.\d+\.\d+)\b|^(\d{4,6})$`)
)

// requirementCues mark a line that talks about a version somebody wants,
// not the one installed ("requires torch>=2.0", "minimum PyTorch version").
var requirementCues = []string{"require", "minimum", "at least", "expect", "need",
	"recommend", "compatib", "support", "upgrade", "downgrade", ">=", "<=", "~=",
	"too old", "older", "newer", "mismatch", "instead", "install"}

func isRequirement(line []byte) bool {
	l := strings.ToLower(string(line))
	for _, c := range requirementCues {
		if strings.Contains(l, c) {
			return true
		}
	}
	return false
}

// versionLine handles the lines that contain "version" or "Version".
func (d *Detector) versionLine(line []byte, where string) {
	s := stripPrefix(line)
	if bytes.Contains(line, tokDriverVer) {
		if m := driverVersionRE.FindSubmatch(line); m != nil {
			d.set("driver", string(m[1]), where)
		}
		if m := smiCUDARE.FindSubmatch(line); m != nil {
			d.set("driver_cuda", string(m[1]), where)
		}
	}
	d.applyRules(versionRules, line, s, where)
	if bytes.Contains(line, tokCuDNNVer) {
		if m := cudnnMismatchRE.FindSubmatch(line); m != nil {
			d.set("cudnn", versionFromCode(string(m[1])), where)
		} else if m := cudnnKeyRE.FindSubmatch(s); m != nil {
			d.collectCuDNN(m[1], where)
		}
	}
	if bytes.Contains(line, tokMismatchVer) {
		if m := extMismatchRE.FindSubmatch(line); m != nil {
			d.set("cuda", string(m[1]), where)
			d.set("torch_cuda", string(m[2]), where)
		}
	}
	if containsAny(line, keyedToks) {
		d.keyed(line, where)
	}
}

// keyed handles "NAME version: X" statements, skipping requirement talk.
func (d *Detector) keyed(line []byte, where string) {
	m := keyedRE.FindSubmatch(line)
	if m == nil || isRequirement(line) {
		return
	}
	name, v := strings.ToLower(string(m[1])), string(m[2])
	dotted := strings.Contains(v, ".")
	switch name {
	case "pytorch", "torch":
		if dotted {
			d.set("torch", v, where)
		}
	case "python":
		if dotted {
			d.set("python", v, where)
		}
	case "cudnn":
		if dotted {
			d.set("cudnn", v, where)
		} else {
			d.set("cudnn", versionFromCode(v), where)
		}
	case "nccl":
		if dotted {
			d.set("nccl", firstParts(v, 3), where)
		} else {
			d.set("nccl", versionFromCode(v), where)
		}
	case "tf", "tensorflow":
		if dotted {
			d.addPackage("tensorflow", v, where)
		}
	default: // jax, jaxlib, triton
		if dotted {
			d.addPackage(name, v, where)
		}
	}
}

// collectCuDNN reads the value of collect_env's "cuDNN version:" line: a
// version, a number like 8902, one library path, or the start of a list.
func (d *Detector) collectCuDNN(val []byte, where string) {
	v := strings.TrimSpace(string(val))
	switch {
	case strings.HasPrefix(v, "Probably one of the following"):
		d.mode = modeCuDNNList
	case strings.Contains(v, "cudnn"):
		d.cudnnPath(v, where)
	default:
		if m := cudnnValueRE.FindStringSubmatch(v); m != nil {
			if m[1] != "" {
				d.set("cudnn", m[1], where)
			} else {
				d.set("cudnn", versionFromCode(m[2]), where)
			}
		}
	}
}

// cudnnPath reads the version from a cuDNN library file name: the full
// version from libcudnn.so.8.9.2, only the major one from a Windows DLL.
func (d *Detector) cudnnPath(p, where string) {
	if m := cudnnPathRE.FindStringSubmatch(p); m != nil {
		d.set("cudnn", m[1], where)
	} else if m := cudnnDLLRE.FindStringSubmatch(p); m != nil {
		d.hint("cudnn", m[1], where)
	}
}

// modeLine continues a multi-line block. It returns true when the line
// belonged to the block; otherwise the block has ended and the line is
// examined as any other.
func (d *Detector) modeLine(line []byte, where string) bool {
	m := d.mode
	d.mode = modeNone
	switch m {
	case modeSMIMemory:
		if mm := smiMemRE.FindSubmatch(line); mm != nil && d.smiGPU >= 0 && d.smiGPU < len(d.env.GPUs) {
			if n, err := strconv.ParseInt(string(mm[1]), 10, 64); err == nil && d.env.GPUs[d.smiGPU].MemoryBytes == 0 {
				d.env.GPUs[d.smiGPU].MemoryBytes = n << 20
			}
			d.smiGPU = -1
			return true
		}
		d.smiGPU = -1
	case modeCollectGPUs:
		t := bytes.TrimSpace(line)
		if len(t) == 0 {
			return true
		}
		if mm := gpuListRE.FindSubmatch(t); mm != nil {
			d.listedGPU(mm, where)
			d.mode = modeCollectGPUs
			return true
		}
		if bytes.HasPrefix(t, []byte("MIG ")) {
			d.mode = modeCollectGPUs
			return true
		}
	case modeCuDNNList:
		t := bytes.TrimSpace(line)
		if bytes.Contains(bytes.ToLower(t), []byte("cudnn")) && (bytes.HasPrefix(t, []byte("/")) || drivePath.Match(t)) {
			d.cudnnPath(string(t), where)
			d.mode = modeCuDNNList
			return true
		}
	case modePipHeader:
		if pipRuleRE.Match(line) {
			d.mode = modePipTable
			return true
		}
	case modePipTable:
		if mm := pipRowRE.FindSubmatch(bytes.TrimSpace(line)); mm != nil {
			d.addPackage(string(mm[1]), string(mm[2]), where)
			d.mode = modePipTable
			return true
		}
	case modeConda:
		t := bytes.TrimSpace(line)
		if len(t) == 0 {
			return true // conda list has no blank lines: the list is over
		}
		if t[0] == '#' {
			d.mode = modeConda
			return true
		}
		if condaRE.Match(t) {
			d.condaRow(t, where)
			d.mode = modeConda
			return true
		}
	case modeCSV:
		if d.csvRowLine(line, where) {
			d.mode = modeCSV
			return true
		}
	}
	return false
}

// gpuLine handles "GPU models and configuration:" and "GPU 0: NAME" lines.
func (d *Detector) gpuLine(line []byte, where string) {
	s := stripPrefix(line)
	if rest, ok := bytes.CutPrefix(s, tokGPUConfig); ok {
		rest = bytes.TrimSpace(rest)
		if len(rest) == 0 {
			d.mode = modeCollectGPUs
			return
		}
		if m := gpuListRE.FindSubmatch(rest); m != nil {
			d.listedGPU(m, where)
		}
		return
	}
	if !bytes.HasPrefix(s, tokGPU) {
		return
	}
	m := gpuListRE.FindSubmatch(s)
	if m == nil {
		return
	}
	// Outside collect_env's block, take a bare "GPU 0: X" only when it has
	// nvidia-smi -L's UUID or X looks like a GPU model.
	if len(m[3]) > 0 || gpuNameRE.Match(m[2]) {
		d.listedGPU(m, where)
	}
}

// gpuMakers begin the name of a GPU that a bare "GPU 0: NAME" lists; the
// gate looks for ": "+maker. "AMD " keeps its space (AMD's names are "AMD
// Instinct ...", "AMD Radeon ..."), so that no gate literal is ": AMD".
var gpuMakers = []string{"NVIDIA", "Tesla", "GeForce", "Quadro", "TITAN", "AMD ", "Radeon", "Instinct"}

var gpuNameRE = regexp.MustCompile(gpuMakersPattern())

// gpuMakersPattern matches a name that starts with a maker, as a word.
func gpuMakersPattern() string {
	alt := make([]string, len(gpuMakers))
	for i, m := range gpuMakers {
		alt[i] = regexp.QuoteMeta(m)
		if !strings.HasSuffix(m, " ") {
			alt[i] += `\b`
		}
	}
	return `^(?:` + strings.Join(alt, "|") + `)`
}

func (d *Detector) listedGPU(m [][]byte, where string) {
	i, err := strconv.Atoi(string(m[1]))
	if err != nil {
		return
	}
	addGPU(&d.env, GPU{Index: i, Name: string(m[2])}, d.where(where))
}

// smiRow reads an nvidia-smi table GPU row; its memory is on the next line.
func (d *Detector) smiRow(t []byte, where string) {
	if bytes.Count(t, []byte("|")) < 3 {
		return
	}
	m := smiRowRE.FindSubmatch(t)
	if m == nil {
		return
	}
	i, _ := strconv.Atoi(string(m[1]))
	d.smiGPU = addGPU(&d.env, GPU{Index: i, Name: string(m[2]), BusID: string(m[3])}, d.where(where))
	if d.smiGPU >= 0 {
		d.mode = modeSMIMemory
	}
}

// condaRow reads "name version build [channel]" from conda list.
func (d *Detector) condaRow(t []byte, where string) {
	m := condaRE.FindSubmatch(t)
	if m == nil {
		return
	}
	name := normalizePackage(string(m[1]))
	if _, had := d.env.Packages[name]; !had {
		d.addPackage(name, string(m[2]), where)
		if name == "torch" && d.condaTorch == "" {
			d.condaTorch = clean(string(m[3]))
		}
	}
}

// csvLine reads an nvidia-smi --format=csv header (which starts the rows)
// or a row without a header in the column order Collect asks for.
func (d *Detector) csvLine(line []byte, where string) {
	t := bytes.TrimSpace(line)
	if len(t) > 0 && t[0] >= '0' && t[0] <= '9' {
		if m := csvBareRE.FindSubmatch(t); m != nil {
			i, _ := strconv.Atoi(string(m[1]))
			mib, _ := strconv.ParseInt(string(m[3]), 10, 64)
			g := GPU{Index: i, Name: strings.TrimSpace(string(m[2])), MemoryBytes: mib << 20, BusID: string(m[4])}
			if c := string(m[6]); c != "" && c[0] != '[' {
				g.Capability = c
			}
			addGPU(&d.env, g, d.where(where))
			d.set("driver", string(m[5]), where)
		}
		return
	}
	if !containsAny(t, csvHeaderToks) && !bytes.HasPrefix(t, tokIndexName) {
		return
	}
	parts := strings.Split(string(t), ",")
	if len(parts) < 2 || len(parts) > maxCSVCols {
		return
	}
	cols, units := make([]string, len(parts)), make([]string, len(parts))
	for i, p := range parts {
		m := csvColRE.FindStringSubmatch(strings.TrimSpace(p))
		if m == nil {
			return
		}
		cols[i], units[i] = m[1], m[2]
	}
	d.csvCols, d.csvUnits, d.csvRow = cols, units, 0
	d.mode = modeCSV
}

// csvRowLine reads one row under an nvidia-smi csv header. A line whose
// fields do not fit the columns' types ends the rows.
func (d *Detector) csvRowLine(line []byte, where string) bool {
	parts := strings.Split(strings.TrimSpace(string(line)), ", ")
	if len(parts) != len(d.csvCols) || len(parts) < 2 {
		return false
	}
	g := GPU{Index: d.csvRow}
	driver := ""
	for i, c := range d.csvCols {
		v := strings.TrimSpace(parts[i])
		if v == "" {
			return false
		}
		if strings.HasPrefix(v, "[") { // [N/A], [Not Supported]
			continue
		}
		ok := true
		switch c {
		case "index":
			g.Index, ok = atoiOK(v)
		case "name":
			g.Name, ok = v, !strings.ContainsAny(v, "|=")
		case "memory.total":
			g.MemoryBytes, ok = csvMemory(v, d.csvUnits[i])
		case "pci.bus_id":
			g.BusID, ok = v, busIDRE.MatchString(v)
		case "compute_cap":
			g.Capability, ok = v, capRE.MatchString(v)
		case "driver_version":
			driver, ok = v, driverRE.MatchString(v)
		}
		if !ok {
			return false
		}
	}
	d.set("driver", driver, where)
	d.csvRow++
	if g.Name != "" || g.BusID != "" || g.MemoryBytes > 0 {
		addGPU(&d.env, g, d.where(where))
	}
	return true
}

var (
	busIDRE  = regexp.MustCompile(`^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]$`)
	capRE    = regexp.MustCompile(`^\d{1,2}\.\d{1,2}$`)
	driverRE = regexp.MustCompile(`^\d{2,4}\.\d{1,3}(?:\.\d{1,3})?$`)
)

func atoiOK(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 0
}

// csvMemory reads "81920 MiB", or "81920" under a "[MiB]" header.
func csvMemory(v, unit string) (int64, bool) {
	f := strings.Fields(v)
	if len(f) == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0, false
	}
	u := unit
	if len(f) > 1 {
		u = f[1]
	}
	switch strings.ToLower(u) {
	case "", "mib":
		return n << 20, true
	case "gib":
		return n << 30, true
	case "kib":
		return n << 10, true
	case "b", "bytes":
		return n, true
	}
	return 0, false
}

// osLine reads collect_env's "OS:" and "Python platform:" lines.
func (d *Detector) osLine(line []byte, where string) {
	s := stripPrefix(line)
	if m := osKeyRE.FindSubmatch(s); m != nil {
		detail := string(m[1])
		if os := classifyOS(detail); os != "" {
			d.set("os", os, where)
			d.set("os_detail", detail, where)
		}
		return
	}
	if m := pyPlatRE.FindSubmatch(line); m != nil {
		d.set("os", classifyOS(string(m[1])), where)
	}
}

var linuxNames = []string{"linux", "ubuntu", "debian", "centos", "red hat", "rhel", "rocky",
	"almalinux", "fedora", "suse", "amazon", "arch", "oracle", "gentoo", "alpine", "nixos",
	"mint", "pop!_os", "manjaro", "kylin", "uos", "openeuler", "anolis"}

// classifyOS names the OS family of a description such as collect_env's.
func classifyOS(s string) string {
	l := strings.ToLower(s)
	switch {
	case strings.Contains(l, "windows"):
		return "windows"
	case strings.Contains(l, "mac"), strings.Contains(l, "darwin"), strings.Contains(l, "os x"):
		return "darwin"
	}
	for _, n := range linuxNames {
		if strings.Contains(l, n) {
			return "linux"
		}
	}
	return ""
}

// hints records weak evidence: paths that show the OS or Python version.
// Once both are hinted nothing here can change, so the tests stop.
func (d *Detector) hints(line []byte, where string) {
	if d.weak.OS != "" && d.weak.Python != "" {
		return
	}
	if bytes.Contains(line, tokDrive) && drivePath.Match(line) {
		d.hint("os", "windows", where)
		if m := pyWinRE.FindSubmatch(line); m != nil {
			d.hint("python", "3."+string(m[1]), where)
		}
	}
	if d.weak.Python == "" && bytes.Contains(line, tokPyDir) {
		if m := pyPathRE.FindSubmatch(line); m != nil {
			d.hint("python", string(m[1]), where)
			if bytes.Contains(line, tokDistPackages) {
				d.hint("os", "linux", where) // Debian's layout
			}
		}
	}
	if d.weak.OS == "" && (bytes.Contains(line, tokLinuxGNU) || bytes.Contains(line, tokNVRM) ||
		bytes.Contains(line, tokNVRMVersion) || bytes.Contains(line, tokLinuxVersion)) {
		d.hint("os", "linux", where)
	}
}

// torchLine reads "torch: 2.2.0" or "torch 2.1.0+cu121" said at the start
// of a line (after log prefixes).
func (d *Detector) torchLine(line []byte, where string) {
	s := stripPrefix(line)
	if len(s) < 7 || !(bytes.HasPrefix(s, tokTorch) || bytes.HasPrefix(s, tokPyTorch)) {
		return
	}
	if m := torchBareRE.FindSubmatch(s); m != nil {
		d.set("torch", string(m[1]), where)
		return
	}
	if m := torchColonRE.FindSubmatch(s); m != nil && !isRequirement(s) {
		d.set("torch", string(m[1]), where)
	}
}

var (
	stampRE  = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?:?\s*`)
	syslogRE = regexp.MustCompile(`^[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \S+ [\w.\-\[\]]+:\s*`)
	levelRE  = regexp.MustCompile(`^(?:(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)(?::[\w.]*:|\s*[:|-]\s*|\s+))`)
	rankRE   = regexp.MustCompile(`^(?:rank\s?\d+|\d+):\s`)
)

// stripPrefix removes what loggers and launchers put before a message:
// "[rank0]: ", "[default0]:", "[1,0]<stdout>:", "0: ", a timestamp, a
// syslog header, a log level.
func stripPrefix(line []byte) []byte {
	s := bytes.TrimSpace(line)
	for range 6 {
		n := len(s)
		switch {
		case len(s) > 0 && s[0] == '[':
			if j := bytes.IndexByte(s, ']'); j > 0 && j < 80 {
				s = s[j+1:]
				s = bytes.TrimPrefix(s, []byte("<stdout>"))
				s = bytes.TrimPrefix(s, []byte("<stderr>"))
				s = bytes.TrimPrefix(s, []byte(":"))
			}
		case len(s) > 0 && s[0] >= '0' && s[0] <= '9':
			if m := stampRE.Find(s); m != nil {
				s = s[len(m):]
			} else if m := rankRE.Find(s); m != nil {
				s = s[len(m):]
			}
		case len(s) > 0 && s[0] >= 'A' && s[0] <= 'Z':
			if m := syslogRE.Find(s); m != nil {
				s = s[len(m):]
			} else if m := levelRE.Find(s); m != nil {
				s = s[len(m):]
			}
		case bytes.HasPrefix(s, []byte("rank")):
			if m := rankRE.Find(s); m != nil {
				s = s[len(m):]
			}
		}
		s = bytes.TrimLeft(s, " \t")
		if len(s) == n {
			break
		}
	}
	return s
}

// versionFromCode reads the version codes cuDNN and NCCL print and
// torch returns: a tuple "(2, 18, 1)", or a number that is
// major*1000+minor*100+patch before cuDNN 9 and NCCL 2.9 (8902 is 8.9.2,
// 2708 is 2.7.8) and major*10000+minor*100+patch since (90100 is 9.1.0,
// 21801 is 2.18.1).
func versionFromCode(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "(") {
		return tupleVersion(s)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return ""
	}
	major, rest := n/1000, n%1000
	if n >= 10000 {
		major, rest = n/10000, n%10000
	}
	return strconv.Itoa(major) + "." + strconv.Itoa(rest/100) + "." + strconv.Itoa(n%100)
}

// tupleVersion turns "(2, 18, 1)" into "2.18.1".
func tupleVersion(s string) string {
	s = strings.Trim(strings.TrimSpace(s), "()")
	var parts []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if _, err := strconv.Atoi(p); err != nil {
			return ""
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ".")
}

// cudaFromInt decodes CUDA's version number: 11040 is 11.4, 12020 is 12.2.
func cudaFromInt(s string) string {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1000 {
		return ""
	}
	return strconv.Itoa(n/1000) + "." + strconv.Itoa(n%1000/10)
}

var (
	cuLocalRE = regexp.MustCompile(`\+cu(\d{2,3})$`)
	cuBuildRE = regexp.MustCompile(`cuda(\d+\.\d+)|cuda(\d{2,3})(?:_|$)`)
)

// cudaFromLocal reads the CUDA of a torch build from its local label:
// 2.1.0+cu121 targets 12.1, +cu118 11.8, +cu92 9.2.
func cudaFromLocal(torch string) string {
	m := cuLocalRE.FindStringSubmatch(torch)
	if m == nil {
		return ""
	}
	return m[1][:len(m[1])-1] + "." + m[1][len(m[1])-1:]
}

// cudaFromBuild reads the CUDA of a conda pytorch build string:
// py3.10_cuda12.1_cudnn8.9.2_0 or conda-forge's cuda120_py310h..._301.
func cudaFromBuild(b string) string {
	m := cuBuildRE.FindStringSubmatch(b)
	switch {
	case m == nil:
		return ""
	case m[1] != "":
		return m[1]
	}
	return m[2][:len(m[2])-1] + "." + m[2][len(m[2])-1:]
}

// smCapability turns an sm_ number into a compute capability: 89 is 8.9.
func smCapability(sm string) string {
	return sm[:len(sm)-1] + "." + sm[len(sm)-1:]
}

// firstParts keeps the first n dot-separated parts: 8.9.2.26 is 8.9.2.
func firstParts(v string, n int) string {
	parts := strings.SplitN(v, ".", n+1)
	if len(parts) > n {
		parts = parts[:n]
	}
	out := strings.Join(parts, ".")
	if i := strings.IndexByte(out, '+'); i >= 0 {
		out = out[:i]
	}
	return out
}

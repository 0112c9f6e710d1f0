module github.com/gpudx/gpudx

go 1.26.0

require (
	github.com/cloudflare/ahocorasick v0.0.0-20240916140611-054963ec9396
	github.com/expr-lang/expr v1.17.8
	github.com/google/pprof v0.0.0-20260906184651-6331bc6350fe
	github.com/petar-dambovaliev/aho-corasick v0.0.0-20250424160509-463d218d4745
	github.com/spf13/cobra v1.10.2
	golang.org/x/net v0.62.0
	golang.org/x/term v0.47.0
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

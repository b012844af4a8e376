package main

import "github.com/urfave/cli/v2"

// lightFlags returns fs with each flag of a type it knows wrapped so that
// its Names() answers from a slice made once. urfave/cli v2 computes a
// flag's names through a regexp on every call (FlagNames), and asks for
// every flag's names for each flag not given (runFlagActions, IsSet):
// about 1,800 regexp runs, a third of the instructions of a netexec
// submit, for its 42 flags. Every other method is the flag's own, through
// the embedded pointer, except String (the help line), which would ask
// the embedded flag for its names: it is urfave/cli's FlagStringer given
// the wrapper. A BoolFlag keeps its own String, as FlagStringer looks for
// *cli.BoolFlag to honour DisableDefaultText. A type it does not know is
// left as it is. Only the user commands' apps use it: config.go's altsrc
// wrapping of the server and stub flags switches on the flag types.
func lightFlags(fs []cli.Flag) []cli.Flag {
	out := make([]cli.Flag, len(fs))
	for i, f := range fs {
		names := f.Names()
		switch f := f.(type) {
		case *cli.BoolFlag:
			out[i] = &lightBoolFlag{f, names}
		case *cli.DurationFlag:
			out[i] = &lightDurationFlag{f, names}
		case *cli.Float64Flag:
			out[i] = &lightFloat64Flag{f, names}
		case *cli.Int64Flag:
			out[i] = &lightInt64Flag{f, names}
		case *cli.IntFlag:
			out[i] = &lightIntFlag{f, names}
		case *cli.StringFlag:
			out[i] = &lightStringFlag{f, names}
		case *cli.StringSliceFlag:
			out[i] = &lightStringSliceFlag{f, names}
		case *cli.Uint64Flag:
			out[i] = &lightUint64Flag{f, names}
		default:
			out[i] = f
		}
	}
	return out
}

// lightBoolFlag is a *cli.BoolFlag whose names are computed once.
type lightBoolFlag struct {
	*cli.BoolFlag
	names []string
}

// Names returns the flag's name and aliases.
func (f *lightBoolFlag) Names() []string { return f.names }

// lightDurationFlag is a *cli.DurationFlag whose names are computed once.
type lightDurationFlag struct {
	*cli.DurationFlag
	names []string
}

// Names returns the flag's name and aliases.
func (f *lightDurationFlag) Names() []string { return f.names }

// String is the flag's help line, written with the names computed once.
func (f *lightDurationFlag) String() string { return cli.FlagStringer(f) }

// lightFloat64Flag is a *cli.Float64Flag whose names are computed once.
type lightFloat64Flag struct {
	*cli.Float64Flag
	names []string
}

// Names returns the flag's name and aliases.
func (f *lightFloat64Flag) Names() []string { return f.names }

// String is the flag's help line, written with the names computed once.
func (f *lightFloat64Flag) String() string { return cli.FlagStringer(f) }

// lightInt64Flag is a *cli.Int64Flag whose names are computed once.
type lightInt64Flag struct {
	*cli.Int64Flag
	names []string
}

// Names returns the flag's name and aliases.
func (f *lightInt64Flag) Names() []string { return f.names }

// String is the flag's help line, written with the names computed once.
func (f *lightInt64Flag) String() string { return cli.FlagStringer(f) }

// lightIntFlag is a *cli.IntFlag whose names are computed once.
type lightIntFlag struct {
	*cli.IntFlag
	names []string
}

// Names returns the flag's name and aliases.
func (f *lightIntFlag) Names() []string { return f.names }

// String is the flag's help line, written with the names computed once.
func (f *lightIntFlag) String() string { return cli.FlagStringer(f) }

// lightStringFlag is a *cli.StringFlag whose names are computed once.
type lightStringFlag struct {
	*cli.StringFlag
	names []string
}

// Names returns the flag's name and aliases.
func (f *lightStringFlag) Names() []string { return f.names }

// String is the flag's help line, written with the names computed once.
func (f *lightStringFlag) String() string { return cli.FlagStringer(f) }

// lightStringSliceFlag is a *cli.StringSliceFlag whose names are computed once.
type lightStringSliceFlag struct {
	*cli.StringSliceFlag
	names []string
}

// Names returns the flag's name and aliases.
func (f *lightStringSliceFlag) Names() []string { return f.names }

// String is the flag's help line, written with the names computed once.
func (f *lightStringSliceFlag) String() string { return cli.FlagStringer(f) }

// lightUint64Flag is a *cli.Uint64Flag whose names are computed once.
type lightUint64Flag struct {
	*cli.Uint64Flag
	names []string
}

// Names returns the flag's name and aliases.
func (f *lightUint64Flag) Names() []string { return f.names }

// String is the flag's help line, written with the names computed once.
func (f *lightUint64Flag) String() string { return cli.FlagStringer(f) }

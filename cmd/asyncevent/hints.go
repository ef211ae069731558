package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
	"github.com/asyncevent/asyncevent/dynamodblocal"
)

// The first stumbles of a newcomer, each answered with what to type instead: a
// command's flag before the command, a misspelled command, an ID the keys cannot
// hold, a table that is not there or not the design's.

// misplacedFlag explains why the global flags refused args: a flag before the command
// that is no global flag. When the command after it has that flag, the hint is the
// command line with the flag moved after the command. It returns nil when args hold
// no such flag.
func misplacedFlag(top *flag.FlagSet, args []string) (err error, hint string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || a == "-" || !strings.HasPrefix(a, "-") {
			return nil, "" // the command: its flags are not the global flags' business
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if f := top.Lookup(name); f != nil {
			if !isBoolFlag(f) && !hasValue {
				i++ // its value
			}
			continue
		}
		if name == "h" || name == "help" {
			return nil, ""
		}
		for j := i + 1; j < len(args); j++ {
			cmd, n := lookup(args[j:])
			if cmd == nil {
				continue
			}
			f := commandFlags(cmd).Lookup(name)
			if f == nil {
				return fmt.Errorf("flag -%s is neither a global flag nor a flag of %s", name, cmd.name),
					fmt.Sprintf("Run 'asyncevent help %s' for its flags.", cmd.name)
			}
			width := 1
			if !isBoolFlag(f) && !hasValue && i+1 < j {
				width = 2
			}
			fixed := append(append(append(append([]string{}, args[:i]...), args[i+width:j+n]...), args[i:i+width]...), args[j+n:]...)
			return fmt.Errorf("flag -%s goes after the command: it is a flag of %s; only -table, -region, -endpoint and -json go before it", name, cmd.name),
				"Did you mean: asyncevent " + shellJoin(fixed)
		}
		if owners := flagOwners(name); len(owners) > 0 {
			return fmt.Errorf("flag -%s is not a global flag: it is a flag of %s, and goes after the command", name, strings.Join(owners, ", ")), "Run 'asyncevent help' for usage."
		}
		return nil, ""
	}
	return nil, ""
}

// flagInGroup explains a group's flag put before its command (event -capacity 3
// create sale): when a later word names a command of the group, the hint is the line
// with that command moved before the flag. It returns nil when rest (the command line
// from the group on) is not so.
func flagInGroup(rest []string) (err error, hint string) {
	if len(rest) < 3 || !strings.HasPrefix(rest[1], "-") || rest[1] == "-" || rest[1] == "--" {
		return nil, ""
	}
	name, _, _ := strings.Cut(strings.TrimLeft(rest[1], "-"), "=")
	for j := 2; j < len(rest); j++ {
		cmd, n := lookup([]string{rest[0], rest[j]})
		if cmd == nil || n != 2 {
			continue
		}
		if commandFlags(cmd).Lookup(name) == nil {
			return fmt.Errorf("flag -%s is not a flag of %s", name, cmd.name), fmt.Sprintf("Run 'asyncevent help %s' for its flags.", cmd.name)
		}
		fixed := append(append([]string{rest[0], rest[j]}, rest[1:j]...), rest[j+1:]...)
		return fmt.Errorf("flag -%s goes after the command: it is a flag of %s", name, cmd.name),
			"Did you mean: asyncevent " + shellJoin(fixed)
	}
	return nil, ""
}

// commandFlags returns a flag set with cmd's own flags.
func commandFlags(cmd *command) *flag.FlagSet {
	fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	if cmd.flags != nil {
		cmd.flags(fs)
	}
	return fs
}

// flagOwners names the commands that have the flag name.
func flagOwners(name string) []string {
	var owners []string
	for _, c := range commands() {
		if commandFlags(c).Lookup(name) != nil {
			owners = append(owners, c.name)
		}
	}
	return owners
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// shellJoin joins args into a line a shell reads back as args.
func shellJoin(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = a
		if a == "" || strings.ContainsFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,@%+", r))
		}) {
			quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(quoted, " ")
}

// nearestCommand returns the command or command group nearest to what words (the
// command line from the command on) begin with, by edit distance; "" when none is
// near enough to be a slip of the keyboard.
func nearestCommand(words []string) string {
	best, bestDist := "", 0
	consider := func(name string, group bool) {
		n := strings.Count(name, " ") + 1
		if n > len(words) {
			return
		}
		typed := strings.Join(words[:n], " ")
		d := editDistance(typed, name)
		if d == 0 || d > max(1, len(name)/4) || group && otherNumber(typed) == name {
			return // a group in the other number is that group: no suggestion of it
		}
		if best == "" || d < bestDist || d == bestDist && len(name) > len(best) { // a whole command before its group
			best, bestDist = name, d
		}
	}
	seen := map[string]bool{}
	for _, c := range commands() {
		consider(c.name, false)
		if group, _, ok := strings.Cut(c.name, " "); ok && !seen[group] {
			seen[group] = true
			consider(group, true)
		}
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b: insertions,
// deletions, substitutions and swaps of two neighbours, each 1.
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}

// checkIDs checks the positional IDs of cmd (the leading EVENT_ID, REQUEST_ID… of
// its usage line) before anything is read or written: a bad one is a usage error.
func checkIDs(cmd *command, pos []string) error {
	for i, word := range strings.Fields(cmd.args) {
		if i >= len(pos) || !strings.HasSuffix(word, "_ID") {
			return nil
		}
		if err := checkID(word, pos[i]); err != nil {
			return err
		}
	}
	return nil
}

// checkID checks one ID, named in the error as the command line names it (EVENT_ID,
// -user): one message and exit code 2 for a bad ID in every command.
func checkID(name, id string) error {
	err := asyncevent.ValidateID(name, id)
	var bad *asyncevent.InvalidIDError
	if errors.As(err, &bad) {
		return clikit.Usagef("invalid %s %q: %s", name, id, bad.Reason)
	}
	return err
}

// tableTrouble turns a missing or mismatched table into the CLI's words: which table,
// where, and the command that makes it. ok is false for any other error.
func (e *env) tableTrouble(err error) (msg error, hint string, ok bool) {
	var mismatch *asyncevent.TableMismatchError
	switch {
	case errors.Is(err, asyncevent.ErrTableNotFound):
		where := "on AWS"
		switch {
		case e.Endpoint != "":
			where = "at " + e.Endpoint
		case e.Region != "":
			where = "on AWS in " + e.Region
		}
		hint = "Create it: " + e.sameFlags("table create")
		if e.Endpoint != "" {
			hint += fmt.Sprintf("\n(A DynamoDB Local without -sharedDb keeps tables per access key and region: this CLI signs as %s in %s, so a table made with other credentials is not seen here.)",
				dynamodblocal.AccessKey, dynamodblocal.Region)
		}
		return fmt.Errorf("table %s not found %s", e.Table, where), hint, true
	case errors.As(err, &mismatch):
		return fmt.Errorf("table %s does not match the design: %s", mismatch.Table, strings.Join(mismatch.Problems, "; ")),
			"Run '" + e.sameFlags("table check") + "' to list the differences, or name a table of the design with -table (" + e.sameFlags("table create") + " makes one).", true
	}
	return nil, "", false
}

// sameFlags is "asyncevent" and command with the global flags of this run that the
// environment would not give, so that the line runs as it is in the same shell.
func (e *env) sameFlags(command string) string {
	parts := []string{"asyncevent"}
	if e.Endpoint != os.Getenv(clikit.EnvEndpoint) {
		parts = append(parts, "-endpoint", e.Endpoint)
	}
	if e.Region != os.Getenv(clikit.EnvRegion) {
		parts = append(parts, "-region", e.Region)
	}
	if e.Table != clikit.EnvOr(clikit.EnvTable, asyncevent.DefaultTableName) {
		parts = append(parts, "-table", e.Table)
	}
	return shellJoin(parts) + " " + command
}

package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// flagLiteral is a long flag as a message would spell it: --argocd-version, --dry-run=client.
var flagLiteral = regexp.MustCompile(`(^|[^-\w])--[a-z][a-z-]*`)

// Flags are the command line's: the packages below it name options (internal/option) and return
// typed errors, and cli spells and words them (words.go). One binary may spell an option
// differently from another, which a message made below the command line cannot know.
//
// internal/session is the command layer's too, as kubectl's Factory is kubectl's (cmd/util): the
// connections a command's flags select, and the messages that tell which flag to change. It sits
// beside cli only so that the UI's backend (`unprune extension`, a command as well) uses it without
// importing the cobra layer.
func TestNoFlagSpellingsBelowCLI(t *testing.T) {
	root := ".." // internal/
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "cli" || rel == "session" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		lits, err := flagLiterals(path)
		found = append(found, lits...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Errorf("%d string literals below internal/cli spell a flag; name the option (internal/option) "+
			"or return a typed error that cli words:\n%s", len(found), strings.Join(found, "\n"))
	}
}

// flagLiterals lists the string literals of one Go file that spell a flag, as file:line: literal.
func flagLiterals(path string) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		if s, err := strconv.Unquote(lit.Value); err == nil && flagLiteral.MatchString(s) {
			p := fset.Position(lit.Pos())
			out = append(out, filepath.ToSlash(p.Filename)+":"+strconv.Itoa(p.Line)+": "+lit.Value)
		}
		return true
	})
	return out, nil
}

// Command opsgen writes meta/instrument_gen.go: the operation table of
// meta.Store and the one instrumented wrapper's methods, one per
// operation, read from the Store interface itself (ADR 0267).
//
// It parses the package's source with go/ast, expands the interfaces
// Store embeds, and for every method but Close emits an op constant, its
// name in opNames, and a method of *instrumented that is the wrapped call
// between begin and end. Run it with `go generate ./meta`; the test in
// this directory fails when the file on disk is not what it would write.
//
// Every operation must take a context.Context first and return an error
// last: that is what begin and end need, and a method that does not is
// no operation of the store (Close, the one exception, is written by
// hand and not measured).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/printer"
	"go/token"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// outName is the file opsgen writes, in the package's directory.
const outName = "instrument_gen.go"

// notOperations are the methods of Store that are no operations: the
// wrapper forwards them by hand, unmeasured.
var notOperations = map[string]bool{"Close": true}

func main() {
	dir := flag.String("dir", ".", "directory of package meta")
	flag.Parse()
	src, err := generate(*dir)
	if err != nil {
		log.Fatalf("opsgen: %v", err)
	}
	if err := os.WriteFile(filepath.Join(*dir, outName), src, 0o644); err != nil {
		log.Fatalf("opsgen: %v", err)
	}
}

// method is one operation of Store, with the file that declares it (its
// imports name the packages of its parameter types).
type method struct {
	name string
	typ  *ast.FuncType
	file *ast.File
}

// generate returns the source of instrument_gen.go for the package in dir.
func generate(dir string) ([]byte, error) {
	fset := token.NewFileSet()
	ifaces, err := parseInterfaces(fset, dir)
	if err != nil {
		return nil, err
	}
	var methods []method
	seen := map[string]bool{}
	if err := expand("Store", ifaces, seen, &methods); err != nil {
		return nil, err
	}
	slices.SortFunc(methods, func(a, b method) int { return strings.Compare(a.name, b.name) })
	for _, m := range methods {
		if err := checkOperation(m); err != nil {
			return nil, err
		}
	}
	return render(methods)
}

// declared is an interface type of the package and its file.
type declared struct {
	iface *ast.InterfaceType
	file  *ast.File
}

// parseInterfaces reads the interface types declared in the package's
// non-test files, by name. The generated file is skipped, so a broken
// one never stops its own regeneration.
func parseInterfaces(fset *token.FileSet, dir string) (map[string]declared, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	ifaces := map[string]declared{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") || filepath.Base(name) == outName {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok {
				if it, ok := ts.Type.(*ast.InterfaceType); ok {
					ifaces[ts.Name.Name] = declared{it, f}
				}
			}
			return true
		})
	}
	return ifaces, nil
}

// expand appends the methods of the named interface to out, those of the
// interfaces it embeds included, skipping notOperations.
func expand(name string, ifaces map[string]declared, seen map[string]bool, out *[]method) error {
	d, ok := ifaces[name]
	if !ok {
		return fmt.Errorf("interface %s not found in package meta", name)
	}
	for _, field := range d.iface.Methods.List {
		switch t := field.Type.(type) {
		case *ast.FuncType:
			for _, n := range field.Names {
				if seen[n.Name] {
					return fmt.Errorf("method %s declared twice", n.Name)
				}
				seen[n.Name] = true
				if !notOperations[n.Name] {
					*out = append(*out, method{n.Name, t, d.file})
				}
			}
		case *ast.Ident:
			if err := expand(t.Name, ifaces, seen, out); err != nil {
				return fmt.Errorf("%s embeds %w", name, err)
			}
		default:
			return fmt.Errorf("%s embeds %T: only interfaces of package meta can be expanded", name, t)
		}
	}
	return nil
}

// checkOperation checks that m takes a context first and returns an
// error last.
func checkOperation(m method) error {
	params := m.typ.Params.List
	if len(params) == 0 || exprString(params[0].Type) != "context.Context" {
		return fmt.Errorf("%s: an operation takes a context.Context first", m.name)
	}
	res := m.typ.Results
	if res == nil || len(res.List) == 0 || exprString(res.List[len(res.List)-1].Type) != "error" {
		return fmt.Errorf("%s: an operation returns an error last", m.name)
	}
	return nil
}

// exprString prints a type expression as it is written in the source.
func exprString(e ast.Expr) string {
	var b bytes.Buffer
	_ = printer.Fprint(&b, token.NewFileSet(), e) // printing to a buffer never fails
	return b.String()
}

// reserved reports whether the generated methods use name themselves
// (the receiver, the call, the context, the results, the pN of unnamed
// parameters); a parameter named so is renamed.
func reserved(name string) bool {
	switch name {
	case "w", "call", "err", "ctx", "_":
		return true
	}
	if len(name) > 1 && (name[0] == 'p' || name[0] == 'r') {
		_, err := strconv.Atoi(name[1:])
		return err == nil
	}
	return false
}

// signature is one method's parameter list, call arguments and results,
// as source text.
type signature struct {
	params, args, results, values []string
}

// signatureOf names the parameters (the declared names, or pN where there
// is none or it clashes), and the results rN, err.
func signatureOf(m method) signature {
	var s signature
	i := 0
	for _, field := range m.typ.Params.List {
		names := field.Names
		if len(names) == 0 {
			names = []*ast.Ident{nil}
		}
		for _, n := range names {
			name := "p" + strconv.Itoa(i)
			switch {
			case i == 0:
				name = "ctx"
			case n != nil && !reserved(n.Name):
				name = n.Name
			}
			typ, arg := exprString(field.Type), name
			if _, ok := field.Type.(*ast.Ellipsis); ok {
				arg += "..."
			}
			s.params = append(s.params, name+" "+typ)
			s.args = append(s.args, arg)
			i++
		}
	}
	j := 0
	for _, field := range m.typ.Results.List {
		n := max(len(field.Names), 1)
		for range n {
			s.results = append(s.results, exprString(field.Type))
			s.values = append(s.values, "r"+strconv.Itoa(j))
			j++
		}
	}
	s.values[len(s.values)-1] = "err"
	return s
}

// imports returns the import specs the methods' types need, sorted, with
// context always among them.
func imports(methods []method) ([]string, error) {
	set := map[string]bool{strconv.Quote("context"): true}
	var missing error
	for _, m := range methods {
		specs := map[string]string{} // by the name the file uses
		for _, imp := range m.file.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			name, spec := filepath.Base(path), imp.Path.Value
			if imp.Name != nil {
				name, spec = imp.Name.Name, imp.Name.Name+" "+imp.Path.Value
			}
			specs[name] = spec
		}
		ast.Inspect(m.typ, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok {
					spec, found := specs[x.Name]
					if !found {
						missing = fmt.Errorf("%s: package %s is not imported", m.name, x.Name)
					}
					set[spec] = true
				}
			}
			return true
		})
	}
	out := make([]string, 0, len(set))
	for spec := range set {
		out = append(out, spec)
	}
	slices.Sort(out)
	return out, missing
}

const header = `// Code generated by opsgen from the Store interface; DO NOT EDIT.
// To add an operation, declare its method on Store (or an interface it
// embeds) and run go generate ./meta.

package meta

`

// render writes the file: imports, the op constants, opNames and the
// methods of *instrumented.
func render(methods []method) ([]byte, error) {
	specs, err := imports(methods)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(header)
	b.WriteString("import (\n")
	for _, spec := range specs {
		b.WriteString("\t" + spec + "\n")
	}
	b.WriteString(")\n\n")

	b.WriteString("// The operations of Store, every method but Close, in name order:\n")
	b.WriteString("// indexes into instrumented.ops.\n")
	b.WriteString("const (\n")
	for i, m := range methods {
		if i == 0 {
			fmt.Fprintf(&b, "\top%s = iota\n", m.name)
		} else {
			fmt.Fprintf(&b, "\top%s\n", m.name)
		}
	}
	b.WriteString("\tnumOps\n)\n\n")

	b.WriteString("// opNames are the operations' names, each its method's: the operation\n")
	b.WriteString("// label of the metrics and the db.operation.name of the spans.\n")
	b.WriteString("var opNames = [numOps]string{\n")
	for _, m := range methods {
		fmt.Fprintf(&b, "\top%s: %q,\n", m.name, m.name)
	}
	b.WriteString("}\n")

	for _, m := range methods {
		s := signatureOf(m)
		results := strings.Join(s.results, ", ")
		if len(s.results) > 1 {
			results = "(" + results + ")"
		}
		fmt.Fprintf(&b, "\nfunc (w *instrumented) %s(%s) %s {\n", m.name, strings.Join(s.params, ", "), results)
		fmt.Fprintf(&b, "\tctx, call := w.begin(ctx, op%s)\n", m.name)
		fmt.Fprintf(&b, "\t%s := w.next.%s(%s)\n", strings.Join(s.values, ", "), m.name, strings.Join(s.args, ", "))
		s.values[len(s.values)-1] = "call.end(err)"
		fmt.Fprintf(&b, "\treturn %s\n}\n", strings.Join(s.values, ", "))
	}
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("format generated code: %w\n%s", err, b.Bytes())
	}
	return src, nil
}

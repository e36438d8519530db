package sqs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeDocumentsOptions: every field of the configuration structs is
// named in the module README (as `Field`, `Struct.Field` or `Field:` in an
// example), so that an option such as ExtendedClientConfig.LegacyAttribute,
// without which some stock consumers take the pointer for the payload,
// cannot be added without its documentation.
func TestReadmeDocumentsOptions(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(readme)
	structs := map[string]bool{"PublisherConfig": true, "ExtendedClientConfig": true, "ConsumerConfig": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			spec, ok := n.(*ast.TypeSpec)
			if !ok || !structs[spec.Name.Name] {
				return true
			}
			found++
			for _, field := range spec.Type.(*ast.StructType).Fields.List {
				for _, id := range field.Names {
					f := id.Name
					if !strings.Contains(doc, "`"+f+"`") && !strings.Contains(doc, "."+f+"`") && !strings.Contains(doc, f+":") {
						t.Errorf("README.md does not name %s.%s", spec.Name.Name, f)
					}
				}
			}
			return false
		})
	}
	if found != len(structs) {
		t.Fatalf("found %d of the %d configuration structs", found, len(structs))
	}
}

// compose-check loads a Compose file with compose-go, the loader of Docker Compose itself: it
// validates the file against the Compose specification's JSON schema, interpolates it (with an
// empty environment, so ${VAR:-default} takes its default and a developer's shell changes
// nothing), checks that references resolve (depends_on, volumes, configs, networks), enables
// every profile, and prints the normalized project as JSON for scripts/deploy/compose.ts.
//
//	compose-check FILE [PROJECT_DIR]
//
// Exit codes: 0 valid, 1 invalid, 2 usage. No Docker engine is involved.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
)

func main() {
	if len(os.Args) < 2 || len(os.Args) > 3 {
		fmt.Fprintln(os.Stderr, "usage: compose-check FILE [PROJECT_DIR]")
		os.Exit(2)
	}
	file, err := filepath.Abs(os.Args[1])
	if err != nil {
		fail(err)
	}
	dir := filepath.Dir(file)
	if len(os.Args) == 3 {
		if dir, err = filepath.Abs(os.Args[2]); err != nil {
			fail(err)
		}
	}
	ctx := context.Background()
	details, err := loader.LoadConfigFiles(ctx, []string{file}, dir)
	if err != nil {
		fail(err)
	}
	details.Environment = types.Mapping{}
	project, err := loader.LoadWithContext(ctx, *details, loader.WithProfiles([]string{"*"}))
	if err != nil {
		fail(err)
	}
	out, err := project.MarshalJSON()
	if err != nil {
		fail(err)
	}
	if _, err := os.Stdout.Write(out); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "compose-check:", err)
	os.Exit(1)
}

package evtx

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestDumpFiles(t *testing.T) {
	for _, f := range strings.Split(os.Getenv("DUMP"), ",") {
		docs, err := Documents(f)
		if err != nil {
			t.Log(err)
		}
		for _, d := range docs {
			fmt.Println(string(d))
		}
	}
}

package detect

import (
	"strings"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/parse"
)

// obfuscatedPowerShell matches PowerShell code written to hide what it
// does from a reader and from signatures: a script block (PowerShell 4104),
// a pipeline's command (Windows PowerShell 800) or a powershell.exe
// command line whose words are built from quoted fragments joined by +
// (`('ne'+'w-'+'item')`), broken by backticks that escape nothing
// (`SecURi`T`ypRO`T`oCOL`), or spelled out as [char] casts — the forms of
// Invoke-Obfuscation, which Emotet's droppers and most commodity loaders
// use. Keyed by the host, the start of the code its member.
func obfuscatedPowerShell(f parse.Event) (string, string, []vigil.NodeRef, bool) {
	var text string
	switch {
	case code(f, "Microsoft-Windows-PowerShell/Operational", "4104"):
		text = str(f, "powershell.file.script_block_text")
	case code(f, "Windows PowerShell", "800"):
		text = str(f, "winlog.event_data.param1")
	case processCreated(f):
		if name := strings.ToLower(baseName(str(f, "process.executable"))); name == "powershell.exe" || name == "pwsh.exe" {
			text = str(f, "process.command_line")
		}
	}
	if !obfuscated(text) {
		return "", "", nil, false
	}
	key, refs := hostKey(f)
	return key, capMember(text), nodes(refs, node(vigil.NodeUser, windowsAccount(f, "user"), false)), true
}

// The counts of obfuscation's marks in one piece of code above which it is
// obfuscated. Hand-written scripts join a few strings with +, escape a
// newline or a tab with a backtick and cast the odd [char]; the
// obfuscators do it dozens of times in a line.
const (
	obfuscatedJoins = 15 // quoted fragments joined by +
	obfuscatedTicks = 4  // backticks inside a word that escape nothing
	obfuscatedChars = 15 // [char] casts
)

// obfuscated reports whether PowerShell code bears obfuscation's marks.
func obfuscated(text string) bool {
	if len(text) < 40 {
		return false
	}
	var joins, ticks, chars int
	for i := 0; i < len(text); i++ {
		switch c := text[i]; c {
		case '\'', '"':
			// A quote, +, and another quote (perhaps across parentheses):
			// 'ne'+'w-', 'Q'+'2h')+('w9p'.
			j := skipSpace(text, i+1)
			for j < len(text) && text[j] == ')' {
				j = skipSpace(text, j+1)
			}
			if j < len(text) && text[j] == '+' {
				j = skipSpace(text, j+1)
				for j < len(text) && text[j] == '(' {
					j = skipSpace(text, j+1)
				}
				if j < len(text) && (text[j] == '\'' || text[j] == '"') {
					joins++
				}
			}
		case '`':
			if i > 0 && i+1 < len(text) && letter(text[i-1]) && letter(text[i+1]) && !strings.ContainsRune("0abefnrtuv", rune(text[i+1])) {
				ticks++
			}
		case '[':
			if i+6 <= len(text) && strings.EqualFold(text[i:i+6], "[char]") {
				chars++
			}
		}
	}
	return joins >= obfuscatedJoins || ticks >= obfuscatedTicks || chars >= obfuscatedChars
}

// skipSpace returns the index of the first byte of s from i that is not a
// space or a tab.
func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

// letter reports whether b is an ASCII letter.
func letter(b byte) bool { return b|0x20 >= 'a' && b|0x20 <= 'z' }

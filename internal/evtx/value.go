package evtx

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Value types of substitution values ([MS-EVEN6] 2.2.18); 0x80 marks an
// array of the type in the low bits.
const (
	typeNull     = 0x00
	typeString   = 0x01
	typeAnsi     = 0x02
	typeInt8     = 0x03
	typeUint8    = 0x04
	typeInt16    = 0x05
	typeUint16   = 0x06
	typeInt32    = 0x07
	typeUint32   = 0x08
	typeInt64    = 0x09
	typeUint64   = 0x0a
	typeReal32   = 0x0b
	typeReal64   = 0x0c
	typeBool     = 0x0d
	typeBinary   = 0x0e
	typeGUID     = 0x0f
	typeSizeT    = 0x10
	typeFiletime = 0x11
	typeSystime  = 0x12
	typeSID      = 0x13
	typeHex32    = 0x14
	typeHex64    = 0x15
	typeBinXML   = 0x21
	typeArray    = 0x80
)

// String renders the value as Windows renders it in an event's XML.
func (v value) String() (string, error) {
	if v.typ&typeArray != 0 {
		return v.array()
	}
	return scalar(v.typ, v.data)
}

func scalar(typ byte, b []byte) (string, error) {
	le := binary.LittleEndian
	need := func(n int) error {
		if len(b) < n {
			return fmt.Errorf("value of type 0x%02x: %d bytes, want %d", typ, len(b), n)
		}
		return nil
	}
	switch typ {
	case typeNull:
		return "", nil
	case typeString:
		return decodeUTF16(b), nil
	case typeAnsi:
		return strings.TrimRight(string(b), "\x00"), nil
	case typeInt8:
		if err := need(1); err != nil {
			return "", err
		}
		return strconv.Itoa(int(int8(b[0]))), nil
	case typeUint8:
		if err := need(1); err != nil {
			return "", err
		}
		return strconv.Itoa(int(b[0])), nil
	case typeInt16:
		if err := need(2); err != nil {
			return "", err
		}
		return strconv.Itoa(int(int16(le.Uint16(b)))), nil
	case typeUint16:
		if err := need(2); err != nil {
			return "", err
		}
		return strconv.Itoa(int(le.Uint16(b))), nil
	case typeInt32:
		if err := need(4); err != nil {
			return "", err
		}
		return strconv.Itoa(int(int32(le.Uint32(b)))), nil
	case typeUint32:
		if err := need(4); err != nil {
			return "", err
		}
		return strconv.FormatUint(uint64(le.Uint32(b)), 10), nil
	case typeInt64:
		if err := need(8); err != nil {
			return "", err
		}
		return strconv.FormatInt(int64(le.Uint64(b)), 10), nil
	case typeUint64:
		if err := need(8); err != nil {
			return "", err
		}
		return strconv.FormatUint(le.Uint64(b), 10), nil
	case typeReal32:
		if err := need(4); err != nil {
			return "", err
		}
		return strconv.FormatFloat(float64(math.Float32frombits(le.Uint32(b))), 'g', -1, 32), nil
	case typeReal64:
		if err := need(8); err != nil {
			return "", err
		}
		return strconv.FormatFloat(math.Float64frombits(le.Uint64(b)), 'g', -1, 64), nil
	case typeBool:
		if err := need(4); err != nil {
			return "", err
		}
		if le.Uint32(b) != 0 {
			return "true", nil
		}
		return "false", nil
	case typeBinary:
		return strings.ToUpper(hex.EncodeToString(b)), nil
	case typeGUID:
		if err := need(16); err != nil {
			return "", err
		}
		return guid(b), nil
	case typeSizeT, typeHex32, typeHex64:
		switch len(b) {
		case 4:
			return "0x" + strconv.FormatUint(uint64(le.Uint32(b)), 16), nil
		case 8:
			return "0x" + strconv.FormatUint(le.Uint64(b), 16), nil
		}
		return "", fmt.Errorf("value of type 0x%02x: %d bytes, want 4 or 8", typ, len(b))
	case typeFiletime:
		if err := need(8); err != nil {
			return "", err
		}
		return filetime(le.Uint64(b)).Format(time.RFC3339Nano), nil
	case typeSystime:
		if err := need(16); err != nil {
			return "", err
		}
		t := time.Date(int(le.Uint16(b)), time.Month(le.Uint16(b[2:])), int(le.Uint16(b[6:])),
			int(le.Uint16(b[8:])), int(le.Uint16(b[10:])), int(le.Uint16(b[12:])),
			int(le.Uint16(b[14:]))*int(time.Millisecond), time.UTC)
		return t.Format(time.RFC3339Nano), nil
	case typeSID:
		return sid(b)
	}
	// EvtHandle, EvtXml and types not yet named: their bytes in hex.
	return strings.ToUpper(hex.EncodeToString(b)), nil
}

// sid renders a security identifier as S-R-A-S1-S2-….
func sid(b []byte) (string, error) {
	if len(b) < 8 {
		return "", fmt.Errorf("SID of %d bytes", len(b))
	}
	n := int(b[1])
	if len(b) < 8+4*n {
		return "", fmt.Errorf("SID of %d bytes with %d sub-authorities", len(b), n)
	}
	var auth uint64
	for _, c := range b[2:8] {
		auth = auth<<8 | uint64(c)
	}
	var sb strings.Builder
	sb.WriteString("S-")
	sb.WriteString(strconv.Itoa(int(b[0])))
	sb.WriteByte('-')
	sb.WriteString(strconv.FormatUint(auth, 10))
	for i := 0; i < n; i++ {
		sb.WriteByte('-')
		sb.WriteString(strconv.FormatUint(uint64(binary.LittleEndian.Uint32(b[8+4*i:])), 10))
	}
	return sb.String(), nil
}

// array renders an array value as its items joined by commas: strings are
// separated by NULs, other types have a fixed size.
func (v value) array() (string, error) {
	typ := v.typ &^ typeArray
	var items []string
	switch typ {
	case typeString:
		items = splitUTF16(v.data)
	case typeAnsi:
		items = strings.Split(strings.TrimRight(string(v.data), "\x00"), "\x00")
	default:
		size := map[byte]int{typeInt8: 1, typeUint8: 1, typeInt16: 2, typeUint16: 2, typeInt32: 4, typeUint32: 4,
			typeInt64: 8, typeUint64: 8, typeReal32: 4, typeReal64: 8, typeBool: 4, typeGUID: 16, typeFiletime: 8,
			typeSystime: 16, typeHex32: 4, typeHex64: 8, typeSizeT: 8}[typ]
		if size == 0 {
			return strings.ToUpper(hex.EncodeToString(v.data)), nil
		}
		for i := 0; i+size <= len(v.data); i += size {
			s, err := scalar(typ, v.data[i:i+size])
			if err != nil {
				return "", err
			}
			items = append(items, s)
		}
	}
	return strings.Join(items, ","), nil
}

func splitUTF16(b []byte) []string {
	var out []string
	start := 0
	for i := 0; i+1 < len(b); i += 2 {
		if b[i] == 0 && b[i+1] == 0 {
			out = append(out, decodeUTF16(b[start:i]))
			start = i + 2
		}
	}
	if start < len(b)-1 {
		out = append(out, decodeUTF16(b[start:]))
	}
	return out
}

// guid renders 16 bytes as {XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}: the
// first three groups little-endian, the rest in order.
func guid(b []byte) string {
	const digits = "0123456789ABCDEF"
	order := [16]int{3, 2, 1, 0, -1, 5, 4, -1, 7, 6, -1, 8, 9, -1, 10, 11}
	out := make([]byte, 0, 38)
	out = append(out, '{')
	for _, i := range order {
		if i < 0 {
			out = append(out, '-')
			continue
		}
		out = append(out, digits[b[i]>>4], digits[b[i]&0xf])
	}
	for _, c := range b[12:16] {
		out = append(out, digits[c>>4], digits[c&0xf])
	}
	return string(append(out, '}'))
}

package queue

import (
	"fmt"
	"testing"
)

func TestDiskReserve(t *testing.T) {
	tests := []struct {
		size, want uint64
	}{
		{64 << 20, 64 << 20 * 5 / 100}, // a small disk keeps 5 %: 3.2 MiB
		{4 << 30, 4 << 30 * 5 / 100},   // 205 MiB
		{6 << 30, 256 << 20},           // 5 % would be 307 MiB: at most 256
		{2 << 40, 256 << 20},
		{0, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.size), func(t *testing.T) {
			if got := diskReserve(tt.size); got != tt.want {
				t.Errorf("diskReserve(%d) = %d, want %d", tt.size, got, tt.want)
			}
		})
	}
}

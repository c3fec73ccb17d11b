package syslog

import (
	"errors"
	"log/slog"
	"net"
	"net/netip"
)

// udpReadBuffer is asked of the kernel for a UDP socket, so that bursts
// wait there rather than being dropped while the listener is busy (the
// kernel may grant less: net.core.rmem_max).
const udpReadBuffer = 4 << 20

func (l *listener) listenUDP() error {
	addr, err := net.ResolveUDPAddr("udp", l.cfg.Addr)
	if err != nil {
		return err
	}
	c, err := net.ListenUDP("udp", addr)
	if err != nil {
		return err
	}
	c.SetReadBuffer(udpReadBuffer)
	l.udp = c
	return nil
}

// serveUDP reads datagrams, one message each, until the socket is
// closed. UDP cannot push back: a message the batcher cannot take at once
// (the queue refuses batches) is dropped and counted.
func (l *listener) serveUDP() {
	buf := make([]byte, 65536)
	var (
		lastPeer netip.AddrPort
		src      source
		dropping bool
	)
	for {
		n, peer, err := l.udp.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			l.s.log.Warn("syslog: UDP read", slog.String("listener", l.cfg.Name), slog.String("error", err.Error()))
			continue
		}
		frame, cut := trimEOL(buf[:n]), 0
		if len(frame) > l.cfg.MaxMessage {
			frame, cut = frame[:l.cfg.MaxMessage], len(frame)
		}
		if len(frame) == 0 {
			continue
		}
		if peer != lastPeer || src.meta == nil {
			lastPeer, src = peer, l.newSource(l.cfg.Org, peer.String(), "")
		}
		if l.s.batcher.offer(l.item(src, frame, cut)) {
			dropping = false
			continue
		}
		l.s.drop(l, dropQueueFull, 1)
		if !dropping {
			dropping = true
			l.s.log.Warn("syslog: UDP messages dropped: the ingest queue refuses batches (counted in vigil_syslog_dropped_total)",
				slog.String("listener", l.cfg.Name))
		}
	}
}

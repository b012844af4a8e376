package simpool

import (
	"bytes"
	"compress/lzw"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/memberlist"
)

// msgType is memberlist's message type byte (net.go in memberlist
// v0.6.0); the numbers are its protocol's.
type msgType uint8

const (
	pingMsg msgType = iota
	indirectPingMsg
	ackRespMsg
	suspectMsg
	aliveMsg
	deadMsg
	pushPullMsg
	compoundMsg
	userMsg
	compressMsg
	encryptMsg
	nackRespMsg
	hasCrcMsg
	errMsg
	// hasLabelMsg starts a labelled packet or stream; netmgr sets no
	// label, and a simulated member drops what carries one.
	hasLabelMsg msgType = 244
)

// The versions a simulated member announces (alive.Vsn): memberlist
// v0.6.0's protocol range 1-5 speaking 2, as DefaultLANConfig does, and no
// delegate protocol. PMax 5 makes the servers add a CRC to what they send
// it; it adds one to what it sends.
var memberVsn = []uint8{memberlist.ProtocolVersionMin, memberlist.ProtocolVersionMax, 2, 0, 0, 0}

// The message bodies, field for field as memberlist encodes them
// (msgpack maps keyed by the field names).
type (
	ping struct {
		SeqNo      uint32
		Node       string
		SourceAddr []byte `codec:",omitempty"`
		SourcePort uint16 `codec:",omitempty"`
		SourceNode string `codec:",omitempty"`
	}
	indirectPingReq struct {
		SeqNo      uint32
		Target     []byte
		Port       uint16
		Node       string
		Nack       bool
		SourceAddr []byte `codec:",omitempty"`
		SourcePort uint16 `codec:",omitempty"`
		SourceNode string `codec:",omitempty"`
	}
	ackResp struct {
		SeqNo   uint32
		Payload []byte
	}
	nackResp struct {
		SeqNo uint32
	}
	suspect struct {
		Incarnation uint32
		Node        string
		From        string
	}
	alive struct {
		Incarnation uint32
		Node        string
		Addr        []byte
		Port        uint16
		Meta        []byte
		Vsn         []uint8
	}
	dead struct {
		Incarnation uint32
		Node        string
		From        string
	}
	pushPullHeader struct {
		Nodes        int
		UserStateLen int
		Join         bool
	}
	pushNodeState struct {
		Name        string
		Addr        []byte
		Port        uint16
		Meta        []byte
		Incarnation uint32
		State       memberlist.NodeStateType
		Vsn         []uint8
	}
	compress struct {
		Algo uint8
		Buf  []byte
	}
)

// maxStream bounds an encrypted stream message read (memberlist's
// maxPushStateBytes).
const maxStream = 20 << 20

// encode returns t's byte followed by v in msgpack.
func encode(t msgType, v any) []byte {
	var buf bytes.Buffer
	buf.WriteByte(byte(t))
	var h codec.MsgpackHandle
	if err := codec.NewEncoder(&buf, &h).Encode(v); err != nil {
		// The bodies above always encode.
		panic(fmt.Sprintf("simpool: encode gossip message %d: %v", t, err))
	}
	return buf.Bytes()
}

// decode reads one msgpack value from buf into v.
func decode(buf []byte, v any) error {
	var h codec.MsgpackHandle
	return codec.NewDecoderBytes(buf, &h).Decode(v)
}

// withCRC prefixes msg with memberlist's CRC header (hasCrcMsg).
func withCRC(msg []byte) []byte {
	out := make([]byte, 5, 5+len(msg))
	out[0] = byte(hasCrcMsg)
	binary.BigEndian.PutUint32(out[1:], crc32.ChecksumIEEE(msg))
	return append(out, msg...)
}

// compoundParts splits a compound message's body (after its type byte).
func compoundParts(buf []byte) ([][]byte, error) {
	if len(buf) < 1 {
		return nil, errors.New("compound message: no length")
	}
	n := int(buf[0])
	buf = buf[1:]
	if len(buf) < 2*n {
		return nil, errors.New("compound message: truncated lengths")
	}
	lens := buf[:2*n]
	buf = buf[2*n:]
	parts := make([][]byte, 0, n)
	for i := range n {
		l := int(binary.BigEndian.Uint16(lens[2*i:]))
		if len(buf) < l {
			break // truncated, as memberlist counts it: keep what came whole
		}
		parts = append(parts, buf[:l])
		buf = buf[l:]
	}
	return parts, nil
}

// decompress undoes a compressMsg body (memberlist's LZW).
func decompress(body []byte) ([]byte, error) {
	var c compress
	if err := decode(body, &c); err != nil {
		return nil, fmt.Errorf("decode compressed message: %w", err)
	}
	return c.inflate()
}

// inflate returns what c compressed.
func (c *compress) inflate() ([]byte, error) {
	if c.Algo != 0 {
		return nil, fmt.Errorf("compressed message: unknown algorithm %d", c.Algo)
	}
	r := lzw.NewReader(bytes.NewReader(c.Buf), lzw.LSB, 8)
	defer r.Close()
	out, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("decompress message: %w", err)
	}
	return out, nil
}

// keyring is the gossip keyring: keys[0] encrypts, every key decrypts.
// Empty gossips in the clear.
type keyring [][]byte

// Encryption as memberlist's security.go does it with protocol version 2:
// version byte 1, a 12-byte nonce, AES-GCM sealed with the additional data
// given (the label, "", for a packet; the stream header for a stream).
const (
	nonceSize  = 12
	encVersion = 1
)

// seal encrypts msg with the first key.
func (k keyring) seal(msg, data []byte) ([]byte, error) {
	gcm, err := newGCM(k[0])
	if err != nil {
		return nil, err
	}
	out := make([]byte, 1+nonceSize, 1+nonceSize+len(msg)+gcm.Overhead())
	out[0] = encVersion
	if _, err := rand.Read(out[1 : 1+nonceSize]); err != nil {
		return nil, fmt.Errorf("gossip nonce: %w", err)
	}
	return gcm.Seal(out, out[1:1+nonceSize], msg, data), nil
}

// open decrypts msg with the first key that can.
func (k keyring) open(msg, data []byte) ([]byte, error) {
	if len(msg) < 1+nonceSize+16 {
		return nil, fmt.Errorf("encrypted gossip of %d bytes is too short", len(msg))
	}
	if msg[0] > encVersion {
		return nil, fmt.Errorf("gossip encryption version %d unknown", msg[0])
	}
	for _, key := range k {
		gcm, err := newGCM(key)
		if err != nil {
			continue
		}
		plain, err := gcm.Open(nil, msg[1:1+nonceSize], msg[1+nonceSize:], data)
		if err != nil {
			continue
		}
		if msg[0] == 0 && len(plain) > 0 { // version 0 pads (PKCS7)
			plain = plain[:len(plain)-int(plain[len(plain)-1])]
		}
		return plain, nil
	}
	return nil, errors.New("no gossip key decrypts the message")
}

func newGCM(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("gossip key: %w", err)
	}
	return cipher.NewGCM(b)
}

// packet makes msg a UDP packet: CRC, then encryption when k has keys.
func (k keyring) packet(msg []byte) ([]byte, error) {
	msg = withCRC(msg)
	if len(k) == 0 {
		return msg, nil
	}
	return k.seal(msg, nil)
}

// unpacket undoes packet: it decrypts (refusing what is not encrypted
// when k has keys, as GossipVerifyIncoming does) and checks the CRC.
func (k keyring) unpacket(buf []byte) ([]byte, error) {
	if len(buf) > 0 && msgType(buf[0]) == hasLabelMsg {
		return nil, errors.New("labelled gossip packet: netmgr sets no label")
	}
	if len(k) > 0 {
		var err error
		if buf, err = k.open(buf, nil); err != nil {
			return nil, err
		}
	}
	if len(buf) >= 5 && msgType(buf[0]) == hasCrcMsg {
		if crc32.ChecksumIEEE(buf[5:]) != binary.BigEndian.Uint32(buf[1:5]) {
			return nil, errors.New("gossip packet: bad checksum")
		}
		buf = buf[5:]
	}
	return buf, nil
}

// stream makes msg a stream message: encrypted in memberlist's stream
// frame (encryptMsg, a 4-byte length, the sealed message, the frame's
// first 5 bytes its additional data) when k has keys.
func (k keyring) stream(msg []byte) ([]byte, error) {
	if len(k) == 0 {
		return msg, nil
	}
	hdr := make([]byte, 5)
	hdr[0] = byte(encryptMsg)
	binary.BigEndian.PutUint32(hdr[1:], uint32(1+nonceSize+len(msg)+16))
	sealed, err := k.seal(msg, hdr)
	if err != nil {
		return nil, err
	}
	return append(hdr, sealed...), nil
}

// readStream reads a stream message's type from r and returns it with a
// reader of its body: the decrypted rest for an encrypted frame (which
// k must be able to open), r itself for a plain one (refused when k has
// keys). A compressed message is decompressed.
func (k keyring) readStream(r io.Reader) (msgType, io.Reader, error) {
	var b [5]byte
	if _, err := io.ReadFull(r, b[:1]); err != nil {
		return 0, nil, err
	}
	t := msgType(b[0])
	switch {
	case t == hasLabelMsg:
		return 0, nil, errors.New("labelled gossip stream: netmgr sets no label")
	case t == encryptMsg:
		if len(k) == 0 {
			return 0, nil, errors.New("encrypted gossip stream, and no keyring")
		}
		if _, err := io.ReadFull(r, b[1:5]); err != nil {
			return 0, nil, err
		}
		n := binary.BigEndian.Uint32(b[1:5])
		if n > maxStream {
			return 0, nil, fmt.Errorf("gossip stream of %d bytes is too large", n)
		}
		ct := make([]byte, n)
		if _, err := io.ReadFull(r, ct); err != nil {
			return 0, nil, err
		}
		plain, err := k.open(ct, b[:5])
		if err != nil {
			return 0, nil, err
		}
		if len(plain) < 1 {
			return 0, nil, errors.New("empty gossip stream message")
		}
		t, r = msgType(plain[0]), bytes.NewReader(plain[1:])
	case len(k) > 0:
		return 0, nil, errors.New("gossip stream not encrypted")
	}
	if t == compressMsg {
		var c compress
		var h codec.MsgpackHandle
		if err := codec.NewDecoder(r, &h).Decode(&c); err != nil {
			return 0, nil, err
		}
		plain, err := c.inflate()
		if err != nil {
			return 0, nil, err
		}
		if len(plain) < 1 {
			return 0, nil, errors.New("empty compressed gossip message")
		}
		t, r = msgType(plain[0]), bytes.NewReader(plain[1:])
	}
	return t, r, nil
}

// localState is a push/pull message holding one member: st.
func localState(st pushNodeState, join bool) []byte {
	var buf bytes.Buffer
	buf.WriteByte(byte(pushPullMsg))
	var h codec.MsgpackHandle
	enc := codec.NewEncoder(&buf, &h)
	if err := enc.Encode(&pushPullHeader{Nodes: 1, Join: join}); err != nil {
		panic(fmt.Sprintf("simpool: encode push/pull header: %v", err))
	}
	if err := enc.Encode(&st); err != nil {
		panic(fmt.Sprintf("simpool: encode push/pull state: %v", err))
	}
	return buf.Bytes()
}

// remoteState reads a push/pull body (after its type byte) from r,
// handing each member to each (which may be nil to skip them) and
// returning the header.
func remoteState(r io.Reader, each func(pushNodeState)) (pushPullHeader, error) {
	var h codec.MsgpackHandle
	dec := codec.NewDecoder(r, &h)
	var hdr pushPullHeader
	if err := dec.Decode(&hdr); err != nil {
		return hdr, fmt.Errorf("read push/pull header: %w", err)
	}
	if hdr.Nodes < 0 || hdr.Nodes > 1<<20 || hdr.UserStateLen < 0 || hdr.UserStateLen > maxStream {
		return hdr, fmt.Errorf("push/pull header out of range: %+v", hdr)
	}
	for range hdr.Nodes {
		var st pushNodeState
		if err := dec.Decode(&st); err != nil {
			return hdr, fmt.Errorf("read push/pull state: %w", err)
		}
		if each != nil {
			each(st)
		}
	}
	if hdr.UserStateLen > 0 {
		if _, err := io.CopyN(io.Discard, r, int64(hdr.UserStateLen)); err != nil {
			return hdr, fmt.Errorf("read push/pull user state: %w", err)
		}
	}
	return hdr, nil
}

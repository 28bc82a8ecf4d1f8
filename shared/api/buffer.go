package api

// Buffer is a request or response body (or one chunk of it). Like HeaderMap,
// methods with an error result return *StreamError on a stream the chain does not
// own, the others panic with it.
type Buffer interface {
	// Bytes returns the content. The slice is only valid until the next change;
	// copy it to keep it.
	Bytes() []byte
	String() string
	Len() int
	Set(data []byte) error
	SetString(s string) error
	Append(data []byte) error
	AppendString(s string) error
	Prepend(data []byte) error
	// Drain removes the first n bytes.
	Drain(n int) error
	Reset() error
}

// BytesBuffer is a plain in-memory Buffer, for direct responses and tests.
type BytesBuffer struct{ b []byte }

// NewBuffer returns a Buffer holding a copy of b.
func NewBuffer(b []byte) *BytesBuffer { return &BytesBuffer{b: append([]byte(nil), b...)} }

// NewBufferString returns a Buffer holding s.
func NewBufferString(s string) *BytesBuffer { return &BytesBuffer{b: []byte(s)} }

func (b *BytesBuffer) Bytes() []byte  { return b.b }
func (b *BytesBuffer) String() string { return string(b.b) }
func (b *BytesBuffer) Len() int       { return len(b.b) }
func (b *BytesBuffer) Set(d []byte) error {
	b.b = append(b.b[:0], d...)
	return nil
}
func (b *BytesBuffer) SetString(s string) error {
	b.b = append(b.b[:0], s...)
	return nil
}
func (b *BytesBuffer) Append(d []byte) error {
	b.b = append(b.b, d...)
	return nil
}
func (b *BytesBuffer) AppendString(s string) error {
	b.b = append(b.b, s...)
	return nil
}
func (b *BytesBuffer) Prepend(d []byte) error {
	b.b = append(append(make([]byte, 0, len(d)+len(b.b)), d...), b.b...)
	return nil
}
func (b *BytesBuffer) Drain(n int) error {
	if n > len(b.b) {
		n = len(b.b)
	}
	b.b = b.b[n:]
	return nil
}
func (b *BytesBuffer) Reset() error {
	b.b = b.b[:0]
	return nil
}

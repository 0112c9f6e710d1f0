package health

import (
	"bytes"
	"fmt"
	"strconv"
	"time"
)

// KmsgRecord turns one /dev/kmsg record ("PRI,SEQ,USEC,FLAGS;text" and
// continuation lines starting with a space, per the kernel's
// Documentation/ABI/testing/dev-kmsg) into a dmesg-style line
// "[    5.123456] text" and the record's time since boot.
func KmsgRecord(rec []byte) (line []byte, sinceBoot time.Duration, err error) {
	head, text, ok := bytes.Cut(rec, []byte{';'})
	if !ok {
		return nil, 0, fmt.Errorf("kmsg record without ';': %.40q", rec)
	}
	if i := bytes.IndexByte(text, '\n'); i >= 0 {
		text = text[:i] // drop the " KEY=value" dictionary lines
	}
	fields := bytes.Split(head, []byte{','})
	if len(fields) < 3 {
		return nil, 0, fmt.Errorf("kmsg record header %q: want PRI,SEQ,USEC", head)
	}
	usec, err := strconv.ParseInt(string(fields[2]), 10, 64)
	if err != nil {
		return nil, 0, fmt.Errorf("kmsg record header %q: %v", head, err)
	}
	line = fmt.Appendf(nil, "[%5d.%06d] %s\n", usec/1e6, usec%1e6, text)
	return line, time.Duration(usec) * time.Microsecond, nil
}

package snapshot

import "encoding/binary"

// Pickle opcodes (Python's Lib/pickletools.py documents each).
const (
	opMark           = '('
	opStop           = '.'
	opPop            = '0'
	opPopMark        = '1'
	opDup            = '2'
	opBinInt         = 'J'
	opBinInt1        = 'K'
	opBinInt2        = 'M'
	opNone           = 'N'
	opBinString      = 'T'
	opShortBinString = 'U'
	opBinUnicode     = 'X'
	opAppend         = 'a'
	opAppends        = 'e'
	opBinGet         = 'h'
	opLongBinGet     = 'j'
	opEmptyList      = ']'
	opList           = 'l'
	opDict           = 'd'
	opEmptyDict      = '}'
	opBinPut         = 'q'
	opLongBinPut     = 'r'
	opSetItem        = 's'
	opSetItems       = 'u'
	opTuple          = 't'
	opEmptyTuple     = ')'
	opBinFloat       = 'G'
	opBinBytes       = 'B'
	opShortBinBytes  = 'C'
	opProto          = 0x80
	opTuple1         = 0x85
	opTuple2         = 0x86
	opTuple3         = 0x87
	opNewTrue        = 0x88
	opNewFalse       = 0x89
	opLong1          = 0x8a
	opLong4          = 0x8b
	opShortBinUni    = 0x8c
	opBinUnicode8    = 0x8d
	opBinBytes8      = 0x8e
	opFrame          = 0x95
	opMemoize        = 0x94
	opByteArray8     = 0x96
)

// refused names the opcodes that import, call or construct, and why each is
// refused. A memory snapshot needs none of them.
var refused = map[byte]string{
	'c':  "import a Python name (GLOBAL)",
	0x93: "import a Python name (STACK_GLOBAL)",
	'R':  "call a function (REDUCE)",
	'b':  "set an object's state (BUILD)",
	'i':  "build a class instance (INST)",
	'o':  "build a class instance (OBJ)",
	0x81: "build a class instance (NEWOBJ)",
	0x92: "build a class instance (NEWOBJ_EX)",
	'P':  "load a persistent object (PERSID)",
	'Q':  "load a persistent object (BINPERSID)",
	0x82: "import a registered extension (EXT1)",
	0x83: "import a registered extension (EXT2)",
	0x84: "import a registered extension (EXT4)",
	0x97: "take an out-of-band buffer (NEXT_BUFFER)",
	0x98: "take an out-of-band buffer (READONLY_BUFFER)",
}

var opNames = map[byte]string{
	opMark: "MARK", opStop: "STOP", opPop: "POP", opPopMark: "POP_MARK", opDup: "DUP",
	opBinInt: "BININT", opBinInt1: "BININT1", opBinInt2: "BININT2", opNone: "NONE",
	opBinString: "BINSTRING", opShortBinString: "SHORT_BINSTRING", opBinUnicode: "BINUNICODE",
	opAppend: "APPEND", opAppends: "APPENDS", opBinGet: "BINGET", opLongBinGet: "LONG_BINGET",
	opEmptyList: "EMPTY_LIST", opList: "LIST", opDict: "DICT", opEmptyDict: "EMPTY_DICT",
	opBinPut: "BINPUT", opLongBinPut: "LONG_BINPUT", opSetItem: "SETITEM", opSetItems: "SETITEMS",
	opTuple: "TUPLE", opEmptyTuple: "EMPTY_TUPLE", opBinFloat: "BINFLOAT", opBinBytes: "BINBYTES",
	opShortBinBytes: "SHORT_BINBYTES", opProto: "PROTO", opTuple1: "TUPLE1", opTuple2: "TUPLE2",
	opTuple3: "TUPLE3", opNewTrue: "NEWTRUE", opNewFalse: "NEWFALSE", opLong1: "LONG1",
	opLong4: "LONG4", opShortBinUni: "SHORT_BINUNICODE", opBinUnicode8: "BINUNICODE8",
	opBinBytes8: "BINBYTES8", opFrame: "FRAME", opMemoize: "MEMOIZE", opByteArray8: "BYTEARRAY8",
	'c': "GLOBAL", 0x93: "STACK_GLOBAL", 'R': "REDUCE", 'b': "BUILD", 'i': "INST", 'o': "OBJ",
	0x81: "NEWOBJ", 0x92: "NEWOBJ_EX", 'P': "PERSID", 'Q': "BINPERSID", 0x82: "EXT1",
	0x83: "EXT2", 0x84: "EXT4", 0x97: "NEXT_BUFFER", 0x98: "READONLY_BUFFER",
	'I': "INT", 'L': "LONG", 'F': "FLOAT", 'S': "STRING", 'V': "UNICODE", 'p': "PUT", 'g': "GET",
	0x8f: "EMPTY_SET", 0x90: "ADDITEMS", 0x91: "FROZENSET",
}

func opName(op byte) string {
	if n, ok := opNames[op]; ok {
		return n
	}
	return "0x" + string("0123456789abcdef"[op>>4]) + string("0123456789abcdef"[op&15])
}

// run executes opcodes until STOP and returns the result.
func (d *decoder) run() (value, error) {
	for {
		if d.pos >= d.end && !d.fill(1) {
			d.op = d.base + int64(d.pos)
			if d.rerr != nil {
				return value{}, &Error{Offset: d.op, Msg: "read error: " + d.rerr.Error()}
			}
			return value{}, &Error{Offset: d.op, Msg: "file ends before the pickle's STOP opcode (truncated file?)"}
		}
		d.op = d.base + int64(d.pos)
		op := d.buf[d.pos]
		d.pos++
		if len(d.stack) > stackFloor && int64(len(d.stack)) > d.op/stackRatio {
			return value{}, d.fail(op, "%d values wait on the stack after %d bytes; no snapshot needs that many", len(d.stack), d.op)
		}
		if len(d.marks) > maxMarks {
			return value{}, d.fail(op, "more than %d MARKs open; snapshots nest fewer than 10 deep", maxMarks)
		}
		if err := d.step(op); err != nil {
			if err == errStop {
				v, err := d.pop(op)
				return v, err
			}
			return value{}, err
		}
		if err := d.checkBudget(op, d.heldNow()); err != nil {
			return value{}, err
		}
	}
}

type stopSignal struct{}

func (stopSignal) Error() string { return "stop" }

var errStop error = stopSignal{}

func (d *decoder) step(op byte) error {
	switch op {
	case opMemoize:
		return d.memoize(op, d.memoLen())
	case opBinGet:
		b, err := d.bytes(op, 1)
		if err != nil {
			return err
		}
		return d.memoFetch(op, uint64(b[0]))
	case opLongBinGet:
		b, err := d.bytes(op, 4)
		if err != nil {
			return err
		}
		return d.memoFetch(op, uint64(binary.LittleEndian.Uint32(b)))
	case opMark:
		d.marks = append(d.marks, len(d.stack))
	case opShortBinUni:
		b, err := d.bytes(op, 1)
		if err != nil {
			return err
		}
		return d.readString(op, uint64(b[0]), kStr)
	case opBinInt1:
		b, err := d.bytes(op, 1)
		if err != nil {
			return err
		}
		d.push(intValue(int64(b[0])))
	case opBinInt2:
		b, err := d.bytes(op, 2)
		if err != nil {
			return err
		}
		d.push(intValue(int64(binary.LittleEndian.Uint16(b))))
	case opBinInt:
		b, err := d.bytes(op, 4)
		if err != nil {
			return err
		}
		d.push(intValue(int64(int32(binary.LittleEndian.Uint32(b)))))
	case opLong1:
		b, err := d.bytes(op, 1)
		if err != nil {
			return err
		}
		n := int(b[0])
		b, err = d.bytes(op, n)
		if err != nil {
			return err
		}
		d.push(d.long(b))
	case opLong4:
		b, err := d.bytes(op, 4)
		if err != nil {
			return err
		}
		n := int32(binary.LittleEndian.Uint32(b))
		if n < 0 || n > maxLong {
			return d.fail(op, "integer of %d bytes is out of range (limit %d)", n, maxLong)
		}
		b, err = d.bytes(op, int(n))
		if err != nil {
			return err
		}
		d.push(d.long(b))
	case opEmptyDict:
		d.push(value{k: kFreshDict})
	case opEmptyList:
		d.push(value{k: kEmptyList})
	case opSetItems, opAppends:
		m, err := d.popMark(op)
		if err != nil {
			return err
		}
		return d.fillContainer(op, m)
	case opSetItem:
		return d.fillContainer(op, len(d.stack)-2)
	case opAppend:
		return d.fillContainer(op, len(d.stack)-1)
	case opBinUnicode:
		b, err := d.bytes(op, 4)
		if err != nil {
			return err
		}
		return d.readString(op, uint64(binary.LittleEndian.Uint32(b)), kStr)
	case opBinUnicode8:
		b, err := d.bytes(op, 8)
		if err != nil {
			return err
		}
		return d.readString(op, binary.LittleEndian.Uint64(b), kStr)
	case opShortBinString:
		b, err := d.bytes(op, 1)
		if err != nil {
			return err
		}
		return d.readString(op, uint64(b[0]), kStr)
	case opBinString:
		b, err := d.bytes(op, 4)
		if err != nil {
			return err
		}
		n := int32(binary.LittleEndian.Uint32(b))
		if n < 0 {
			return d.fail(op, "negative string length %d", n)
		}
		return d.readString(op, uint64(n), kStr)
	case opShortBinBytes:
		b, err := d.bytes(op, 1)
		if err != nil {
			return err
		}
		return d.readString(op, uint64(b[0]), kBytes)
	case opBinBytes:
		b, err := d.bytes(op, 4)
		if err != nil {
			return err
		}
		return d.readString(op, uint64(binary.LittleEndian.Uint32(b)), kBytes)
	case opBinBytes8, opByteArray8:
		b, err := d.bytes(op, 8)
		if err != nil {
			return err
		}
		return d.readString(op, binary.LittleEndian.Uint64(b), kBytes)
	case opBinFloat:
		b, err := d.bytes(op, 8)
		if err != nil {
			return err
		}
		d.push(value{k: kFloat, n: binary.BigEndian.Uint64(b)})
	case opNone:
		d.push(value{k: kNone})
	case opNewTrue:
		d.push(value{k: kBool, n: 1})
	case opNewFalse:
		d.push(value{k: kBool})
	case opEmptyTuple:
		d.push(value{k: kTuple, n: 0}) // d.tuples[0] is the empty tuple
	case opTuple1, opTuple2, opTuple3:
		if err := d.grow(op); err != nil {
			return err
		}
		n := int(op-opTuple1) + 1
		t, err := d.below(op, len(d.stack)-n)
		if err != nil {
			return err
		}
		v := d.newTuple(d.stack[t:])
		d.stack = d.stack[:t]
		d.push(v)
	case opTuple:
		m, err := d.popMark(op)
		if err != nil {
			return err
		}
		if err := d.grow(op); err != nil {
			return err
		}
		v := d.newTuple(d.stack[m:])
		d.stack = d.stack[:m]
		d.push(v)
	case opList:
		m, err := d.popMark(op)
		if err != nil {
			return err
		}
		v := value{k: kEmptyList}
		if err := d.appendItems(op, &v, d.stack[m:]); err != nil {
			return err
		}
		d.stack = d.stack[:m]
		d.push(v)
	case opDict:
		m, err := d.popMark(op)
		if err != nil {
			return err
		}
		v := value{k: kFreshDict}
		if err := d.setItems(op, &v, d.stack[m:]); err != nil {
			return err
		}
		d.stack = d.stack[:m]
		d.push(v)
	case opBinPut:
		b, err := d.bytes(op, 1)
		if err != nil {
			return err
		}
		return d.memoize(op, uint64(b[0]))
	case opLongBinPut:
		b, err := d.bytes(op, 4)
		if err != nil {
			return err
		}
		return d.memoize(op, uint64(binary.LittleEndian.Uint32(b)))
	case opFrame:
		_, err := d.bytes(op, 8)
		return err
	case opProto:
		b, err := d.bytes(op, 1)
		if err != nil {
			return err
		}
		if b[0] > 5 {
			return d.fail(op, "pickle protocol %d is newer than this reader knows (0 to 5)", b[0])
		}
		d.out.Layout.Protocol = int(b[0])
	case opPop:
		if len(d.marks) > 0 && len(d.stack) == d.marks[len(d.marks)-1] {
			d.marks = d.marks[:len(d.marks)-1]
			return nil
		}
		_, err := d.pop(op)
		return err
	case opPopMark:
		m, err := d.popMark(op)
		if err != nil {
			return err
		}
		d.stack = d.stack[:m]
	case opDup:
		if len(d.stack) == 0 {
			return d.fail(op, "stack underflow")
		}
		if err := d.unshared(op, d.stack[len(d.stack)-1]); err != nil {
			return err
		}
		d.push(d.stack[len(d.stack)-1])
	case opStop:
		if len(d.marks) > 0 {
			return d.fail(op, "STOP inside an unfinished MARK")
		}
		if len(d.stack) != 1 {
			return d.fail(op, "STOP with %d values on the stack, want 1", len(d.stack))
		}
		return errStop
	default:
		if why, ok := refused[op]; ok {
			return d.fail(op, "the pickle asks to %s; a memory snapshot holds only plain data, so gpudx refuses it", why)
		}
		switch op {
		case 'I', 'L', 'F', 'S', 'V', 'p', 'g':
			return d.fail(op, "protocol-0 text opcode; snapshots are written with pickle protocol 2 or newer")
		}
		return d.fail(op, "unknown opcode; the file is not a pickle of plain data")
	}
	return nil
}

// fillContainer sets (SETITEM, SETITEMS) or appends (APPEND, APPENDS) the
// items from stack index from on into the container just below them, and
// drops the items.
func (d *decoder) fillContainer(op byte, from int) error {
	t, err := d.below(op, from-1)
	if err != nil {
		return err
	}
	if op == opSetItems || op == opSetItem {
		err = d.setItems(op, &d.stack[t], d.stack[from:])
	} else {
		err = d.appendItems(op, &d.stack[t], d.stack[from:])
	}
	if err != nil {
		return err
	}
	d.stack = d.stack[:from]
	return nil
}

// memoLen is the next MEMOIZE slot: like Python's len(memo), the number of
// distinct slots stored so far.
func (d *decoder) memoLen() uint64 { return d.memoN }

func (d *decoder) newTuple(items []value) value {
	t := make([]value, len(items))
	copy(t, items)
	d.held += 24 + valueSize*int64(len(items))
	d.tuples = append(d.tuples, t)
	return value{k: kTuple, n: uint64(len(d.tuples) - 1)}
}

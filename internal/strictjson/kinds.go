package strictjson

// Kind is the kind of a member's value ScanObject reports.
type Kind byte

// The kinds of value ScanObject reports.
const (
	KindString Kind = 's' // a string of printable ASCII without escapes: the value is its bytes, without quotes
	KindNull   Kind = 'n' // null: the value is empty
	KindUint   Kind = 'u' // an unsigned integer of at most maxDigits digits: the value is its digits
	KindOther  Kind = 'o' // any other value: the value is its JSON text
)

// maxDigits bounds the digits of an integer of KindUint, so that every one
// fits in a uint64 (whose largest has 20 digits).
const maxDigits = 19

// maxMembers bounds the members of an object ScanObject accepts (it
// compares each name with those before to refuse a duplicate).
const maxMembers = 32

//go:build amd64 && !purego

#include "textflag.h"

// func plainBlocks(s []byte) int
//
// plainBlocks returns the index of the first byte of s that is not plain
// (PlainRun), looking at whole blocks of 32 bytes only: when every whole
// block is plain it returns their length, len(s) rounded down to 32.
// A byte x is plain when 0x1f < x < 0x7f as signed bytes (so not 0x80 and
// above) and it is neither '"' nor '\\'.
TEXT ·plainBlocks(SB), NOSPLIT, $0-32
	MOVQ s_base+0(FP), SI
	MOVQ s_len+8(FP), CX
	ANDQ $~31, CX             // the whole blocks' length
	XORQ AX, AX               // i
	MOVQ $0x1f1f1f1f1f1f1f1f, DX
	MOVQ DX, X1
	VPBROADCASTQ X1, Y1       // 0x1f
	MOVQ $0x7f7f7f7f7f7f7f7f, DX
	MOVQ DX, X2
	VPBROADCASTQ X2, Y2       // 0x7f
	MOVQ $0x2222222222222222, DX
	MOVQ DX, X3
	VPBROADCASTQ X3, Y3       // '"'
	MOVQ $0x5c5c5c5c5c5c5c5c, DX
	MOVQ DX, X4
	VPBROADCASTQ X4, Y4       // '\\'

loop:
	CMPQ AX, CX
	JAE  done
	VMOVDQU  (SI)(AX*1), Y0
	VPCMPGTB Y1, Y0, Y5       // x > 0x1f
	VPCMPGTB Y0, Y2, Y6       // 0x7f > x
	VPAND    Y5, Y6, Y5       // in the printable range
	VPCMPEQB Y3, Y0, Y7       // x == '"'
	VPCMPEQB Y4, Y0, Y8       // x == '\\'
	VPOR     Y7, Y8, Y7
	VPANDN   Y5, Y7, Y5       // plain: in range, and neither
	VPMOVMSKB Y5, DX
	CMPL DX, $0xffffffff
	JNE  found
	ADDQ $32, AX
	JMP  loop

found:
	NOTL DX
	BSFL DX, DX               // the first byte not plain in the block
	ADDQ DX, AX

done:
	VZEROUPPER
	MOVQ AX, ret+24(FP)
	RET

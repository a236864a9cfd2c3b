#include "textflag.h"

// Broadcast a float32 constant given by its bits into a YMM register.
#define BCAST(bits, reg) MOVL $bits, AX; VMOVD AX, X2; VPBROADCASTD X2, reg

// func sumExpAVX2(xs []float32, m float32) float64
//
// Σ e^(x-m) over xs, len(xs) a multiple of 8, for m ≥ every x. Per lane:
// y = max(x-m, -87); n = round(y·log2 e); r = y - n·ln2 (split in two
// for precision); e^r by its degree-6 Taylor polynomial (Horner, FMA);
// times 2^n by adding n to the exponent bits. Sums are kept in float64.
TEXT ·sumExpAVX2(SB), NOSPLIT, $0-40
	MOVQ xs_base+0(FP), SI
	MOVQ xs_len+8(FP), CX
	VBROADCASTSS m+24(FP), Y0
	BCAST(0xc2ae0000, Y1)  // -87
	BCAST(0x3fb8aa3b, Y3)  // log2 e
	BCAST(0x3f318000, Y5)  // ln2, high part
	BCAST(0xb95e8083, Y6)  // ln2, low part
	BCAST(0x3ab60b61, Y7)  // 1/720
	BCAST(0x3c088889, Y9)  // 1/120
	BCAST(0x3d2aaaab, Y10) // 1/24
	BCAST(0x3e2aaaab, Y11) // 1/6
	BCAST(0x3f000000, Y12) // 1/2
	BCAST(0x3f800000, Y13) // 1
	VXORPD Y14, Y14, Y14
	VXORPD Y15, Y15, Y15
	SHRQ $3, CX
	JZ   done

loop:
	VMOVUPS (SI), Y2
	VSUBPS  Y0, Y2, Y2          // y = x - m
	VMAXPS  Y1, Y2, Y2          // y = max(y, -87)
	VMULPS  Y3, Y2, Y4          // y·log2 e
	VROUNDPS $0, Y4, Y4         // n
	VFNMADD231PS Y5, Y4, Y2     // r = y - n·ln2hi
	VFNMADD231PS Y6, Y4, Y2     // r -= n·ln2lo
	VMOVAPS Y7, Y8              // p = 1/720
	VFMADD213PS Y9, Y2, Y8      // p = p·r + 1/120
	VFMADD213PS Y10, Y2, Y8     // p = p·r + 1/24
	VFMADD213PS Y11, Y2, Y8     // p = p·r + 1/6
	VFMADD213PS Y12, Y2, Y8     // p = p·r + 1/2
	VFMADD213PS Y13, Y2, Y8     // p = p·r + 1
	VFMADD213PS Y13, Y2, Y8     // p = p·r + 1
	VCVTPS2DQ Y4, Y4            // n as int32
	VPSLLD  $23, Y4, Y4
	VPADDD  Y4, Y8, Y8          // p · 2^n
	VCVTPS2PD X8, Y4            // low four lanes to float64
	VADDPD  Y4, Y14, Y14
	VEXTRACTF128 $1, Y8, X4
	VCVTPS2PD X4, Y4            // high four lanes
	VADDPD  Y4, Y15, Y15
	ADDQ $32, SI
	DECQ CX
	JNZ  loop

done:
	VADDPD Y15, Y14, Y14
	VEXTRACTF128 $1, Y14, X15
	VADDPD X15, X14, X14
	VHADDPD X14, X14, X14
	VZEROUPPER
	MOVSD X14, ret+32(FP)
	RET

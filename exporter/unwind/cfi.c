// SPDX-License-Identifier: Apache-2.0
/*
 * CFI unwind tables from .eh_frame / .debug_frame (see cfi.h). Sources: DWARF 5 section 6.4,
 * LSB 5.0 "Exception Frames" (.eh_frame, augmentations, DW_EH_PE_* encodings), x86-64 psABI 3.6.
 *
 * Shape: one pass over the section; each FDE is interpreted on its own into rows, then FDEs are
 * sorted, overlaps dropped, rows merged and gap markers inserted. All reads go through a bounded
 * cursor, so corrupt input can only make an FDE (or the rest of the section) be skipped.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unwind/cfi.h"
#include "util/regfile.h"
#include "util/util.h"

/* DWARF register numbers, x86-64 psABI figure 3.36. */
#define REG_RBP 6
#define REG_RSP 7
#define REG_RA 16
#define REG_RDI 5 /* glibc's __vfork keeps the return address in it across the syscall */

/* DW_EH_PE_* (LSB 5.0, 10.5). */
#define PE_OMIT 0xff
#define PE_FMT_MASK 0x0f
#define PE_APP_MASK 0x70
#define PE_INDIRECT 0x80
#define PE_ABSPTR 0x00
#define PE_ULEB128 0x01
#define PE_UDATA2 0x02
#define PE_UDATA4 0x03
#define PE_UDATA8 0x04
#define PE_SLEB128 0x09
#define PE_SDATA2 0x0a
#define PE_SDATA4 0x0b
#define PE_SDATA8 0x0c
#define PE_PCREL 0x10
#define PE_TEXTREL 0x20
#define PE_DATAREL 0x30

/* remember_state nesting; compilers use one or two levels. Deeper input drops the FDE. */
#define STATE_STACK_MAX 16

struct cursor {
	const uint8_t *p, *end;
	bool bad;
};

static uint64_t cur_bytes(struct cursor *c, size_t n, bool sign)
{
	uint64_t v = 0;
	size_t i;

	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = true;
		return 0;
	}
	for (i = 0; i < n; i++)
		v |= (uint64_t)c->p[i] << (8 * i);
	c->p += n;
	if (sign && n < 8 && (v >> (8 * n - 1)) & 1)
		v |= ~0ULL << (8 * n);
	return v;
}

static uint8_t cur_u8(struct cursor *c)
{
	return (uint8_t)cur_bytes(c, 1, false);
}

/* LEB128 (DWARF 5, 7.6); more than 10 bytes cannot fit 64 bits and marks the cursor bad. */
static uint64_t cur_leb(struct cursor *c, bool sign)
{
	uint64_t v = 0;
	unsigned int shift = 0;
	uint8_t b;

	do {
		if (c->bad || c->p >= c->end || shift >= 64) {
			c->bad = true;
			return 0;
		}
		b = *c->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (sign && shift < 64 && (b & 0x40))
		v |= ~0ULL << shift;
	return v;
}

static uint64_t cur_uleb(struct cursor *c)
{
	return cur_leb(c, false);
}

static int64_t cur_sleb(struct cursor *c)
{
	return (int64_t)cur_leb(c, true);
}

static void cur_skip(struct cursor *c, uint64_t n)
{
	if (c->bad || (uint64_t)(c->end - c->p) < n)
		c->bad = true;
	else
		c->p += n;
}

/* A factored offset (DWARF 5, 6.4.2.2); values no real frame has mark the cursor bad. */
static int64_t factored(struct cursor *c, int64_t v, int64_t factor)
{
	if (v > (1LL << 40) || v < -(1LL << 40)) {
		c->bad = true;
		return 0;
	}
	return v * factor;
}

/* What the section's addresses are relative to. */
struct section_ctx {
	const uint8_t *buf;
	size_t size;
	uint64_t addr;	    /* sh_addr: base of DW_EH_PE_pcrel */
	bool eh;	    /* .eh_frame rules (CIE id 0, relative CIE pointers, encodings) */
	uint64_t text_addr; /* DW_EH_PE_textrel base, 0 = unknown */
	uint64_t got_addr;  /* DW_EH_PE_datarel base, 0 = unknown */
};

/* Reads a DW_EH_PE_* encoded value; with indirect set the value is the pointer's address. */
static uint64_t read_encoded(struct cursor *c, uint8_t enc, const struct section_ctx *s,
			     bool *indirect)
{
	uint64_t field = s->addr + (uint64_t)(c->p - s->buf), v;

	*indirect = enc & PE_INDIRECT;
	switch (enc & PE_FMT_MASK) {
	case PE_ABSPTR:
	case PE_UDATA8:
	case PE_SDATA8:
		v = cur_bytes(c, 8, false);
		break;
	case PE_ULEB128:
		v = cur_uleb(c);
		break;
	case PE_UDATA2:
		v = cur_bytes(c, 2, false);
		break;
	case PE_UDATA4:
		v = cur_bytes(c, 4, false);
		break;
	case PE_SLEB128:
		v = (uint64_t)cur_sleb(c);
		break;
	case PE_SDATA2:
		v = cur_bytes(c, 2, true);
		break;
	case PE_SDATA4:
		v = cur_bytes(c, 4, true);
		break;
	default:
		c->bad = true;
		return 0;
	}
	switch (enc & PE_APP_MASK) {
	case 0:
		break;
	case PE_PCREL:
		v += field;
		break;
	case PE_TEXTREL:
		if (!s->text_addr)
			c->bad = true;
		v += s->text_addr;
		break;
	case PE_DATAREL:
		if (!s->got_addr)
			c->bad = true;
		v += s->got_addr;
		break;
	default: /* funcrel, aligned: meaningless for the fields read here */
		c->bad = true;
	}
	return v;
}

/* Size-only read of a DW_EH_PE_* range (no application, LSB 5.0: "pc range"). */
static uint64_t read_range(struct cursor *c, uint8_t enc)
{
	struct section_ctx none = {.buf = c->p};
	bool ind;

	return read_encoded(c, enc & PE_FMT_MASK, &none, &ind);
}

enum rule_how {
	RULE_UNMENTIONED = 0, /* initial rule: callee-saved registers keep their value */
	RULE_SAME,
	RULE_UNDEF,
	RULE_OFFSET, /* saved at CFA + off */
	RULE_REG,    /* held in register off (DW_CFA_register) */
	RULE_OTHER,  /* val_offset, expression, val_expression: not representable */
};

enum cfa_how {
	CFA_NONE = 0, /* not defined yet */
	CFA_REG,
	CFA_PLT,
	CFA_OTHER, /* unrecognized expression, or invalid sequence */
};

struct rule {
	uint8_t how;
	int64_t off;
};

struct cfi_state {
	uint8_t cfa_how;
	uint64_t cfa_reg;
	int64_t cfa_off;
	uint16_t plt; /* PLT: base | threshold << 8 */
	struct rule rbp, rsp, ra;
};

struct cie {
	size_t off; /* offset in the section; SIZE_MAX = none cached */
	bool ok;
	uint64_t code_align;
	int64_t data_align;
	uint8_t fde_enc;
	uint8_t addr_size;
	bool has_z, signal;
	const uint8_t *insns, *insns_end;
	struct cfi_state init;
};

/* 24 bytes: whole-machine profiling builds tables of files with a few 100k FDEs. */
struct fde_rec {
	uint64_t start, end;
	uint32_t first, count; /* into builder.rows */
};

struct exec_range {
	uint64_t start, end;
};

struct builder {
	struct cfi_stats st;
	struct unwind_row *rows; /* pc: offset from the start of its FDE */
	size_t nrows, caprows;
	struct fde_rec *fdes;
	size_t nfdes, capfdes;
	struct exec_range *exec;
	size_t nexec;
	struct cie cie; /* one-entry cache: FDEs mostly follow their CIE */
	bool oom;
};

struct cfi_table {
	struct unwind_row *rows;
	uint32_t count;
	uint64_t base;
	struct cfi_stats stats;
};

static struct rule *state_rule(struct cfi_state *s, uint64_t reg)
{
	switch (reg) {
	case REG_RBP:
		return &s->rbp;
	case REG_RSP:
		return &s->rsp;
	case REG_RA:
		return &s->ra;
	default:
		return NULL; /* other registers do not matter to the walker */
	}
}

static void set_rule(struct cfi_state *s, uint64_t reg, uint8_t how, int64_t off)
{
	struct rule *r = state_rule(s, reg);

	if (r) {
		r->how = how;
		r->off = off;
	}
}

/*
 * The PLT stub expression ld emits for .plt (x86-64): DW_OP_breg7 N; DW_OP_breg16 0;
 * DW_OP_lit15; DW_OP_and; DW_OP_lit<K>; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus,
 * i.e. CFA = RSP + N + 8 * ((RIP & 15) >= K). Returns the packed base | K << 8, or -1.
 */
static int match_plt_expr(const uint8_t *p, uint64_t len)
{
	struct cursor c = {.p = p, .end = p + len};
	int64_t base, rip_off;
	uint8_t k;

	if (cur_u8(&c) != 0x77) /* DW_OP_breg7 */
		return -1;
	base = cur_sleb(&c);
	if (cur_u8(&c) != 0x80) /* DW_OP_breg16 */
		return -1;
	rip_off = cur_sleb(&c);
	if (cur_u8(&c) != 0x3f || cur_u8(&c) != 0x1a) /* DW_OP_lit15, DW_OP_and */
		return -1;
	k = cur_u8(&c);
	if (k < 0x30 || k > 0x3f) /* DW_OP_lit0..lit15 */
		return -1;
	if (cur_u8(&c) != 0x2a || cur_u8(&c) != 0x33 || cur_u8(&c) != 0x24 || cur_u8(&c) != 0x22)
		return -1; /* DW_OP_ge, DW_OP_lit3, DW_OP_shl, DW_OP_plus */
	if (c.bad || c.p != c.end || rip_off != 0 || base < 0 || base > 0xff)
		return -1;
	return (int)base | (k - 0x30) << 8;
}

/* The row a state means to the walker (pc left 0). */
static struct unwind_row state_row(const struct cfi_state *s, bool signal)
{
	struct unwind_row r = {0};
	bool ra_rdi;

	if (signal) {
		r.kind = UNWIND_KIND_SIGNAL;
		return r;
	}
	if (s->ra.how == RULE_UNDEF) {
		r.kind = UNWIND_KIND_END;
		return r;
	}
	r.kind = UNWIND_KIND_UNSUPPORTED;
	/* The return address at CFA - 8, or (glibc's __vfork) in RDI with the CFA on RSP. */
	ra_rdi = s->ra.how == RULE_REG && s->ra.off == REG_RDI;
	if ((!ra_rdi && (s->ra.how != RULE_OFFSET || s->ra.off != -8)) ||
	    s->rsp.how != RULE_UNMENTIONED)
		return r;
	if (ra_rdi && (s->cfa_how != CFA_REG || s->cfa_reg != REG_RSP))
		return r;
	if (s->cfa_how == CFA_PLT) {
		r.kind = UNWIND_KIND_PLT;
		r.cfa_off = s->plt;
	} else if (s->cfa_how == CFA_REG && s->cfa_off >= 0 && s->cfa_off <= 0xffff &&
		   (s->cfa_reg == REG_RSP || s->cfa_reg == REG_RBP)) {
		r.kind = s->cfa_reg == REG_RSP ? UNWIND_KIND_CFA_RSP : UNWIND_KIND_CFA_RBP;
		if (ra_rdi)
			r.kind = UNWIND_KIND_RA_RDI;
		r.cfa_off = (uint16_t)s->cfa_off;
	} else {
		return r;
	}
	switch (s->rbp.how) {
	case RULE_UNMENTIONED:
	case RULE_SAME:
		r.rbp = 0;
		break;
	case RULE_OFFSET:
		if (s->rbp.off != 0 && s->rbp.off % 8 == 0 && s->rbp.off >= -127 * 8 &&
		    s->rbp.off <= 127 * 8)
			r.rbp = (int8_t)(s->rbp.off / 8);
		else
			r.rbp = UNWIND_RBP_UNKNOWN;
		break;
	default:
		r.rbp = UNWIND_RBP_UNKNOWN;
	}
	return r;
}

static bool row_same_rule(const struct unwind_row *a, const struct unwind_row *b)
{
	return a->kind == b->kind && a->cfa_off == b->cfa_off && a->rbp == b->rbp;
}

static int push_row(struct builder *b, const struct fde_rec *fde, uint64_t loc,
		    const struct cfi_state *s, bool signal)
{
	struct unwind_row r = state_row(s, signal);
	struct unwind_row *t;

	/* Merge with the previous row of the same FDE when nothing the walker sees changed. */
	if (b->nrows > fde->first && row_same_rule(&b->rows[b->nrows - 1], &r))
		return 0;
	if (b->nrows == UINT32_MAX)
		return -ENOMEM; /* fde_rec.first: far beyond any real file */
	if (b->nrows == b->caprows) {
		size_t cap = b->caprows ? b->caprows * 2 : 1024;

		t = realloc(b->rows, cap * sizeof(*t));
		if (!t)
			return -ENOMEM;
		b->rows = t;
		b->caprows = cap;
	}
	/* loc < fde->end; FDEs of 4 GiB or more keep no rows (parse_fde). */
	r.pc = (uint32_t)(loc - fde->start);
	b->rows[b->nrows++] = r;
	return 0;
}

/*
 * Interprets CFA instructions (DWARF 5, 6.4.2). For a CIE (fde == NULL) only the initial state
 * is computed and any advance is an error; for an FDE rows are pushed for [start, end).
 * Returns 0, -EINVAL for input that cannot be interpreted exactly (caller drops the FDE), or
 * -ENOMEM. Each instruction consumes at least one byte, so the loop is bounded by the input.
 */
static int interpret(struct builder *b, const struct cie *cie, struct cursor *c,
		     const struct section_ctx *s, struct cfi_state *st, const struct fde_rec *fde)
{
	struct cfi_state stack[STATE_STACK_MAX];
	unsigned int depth = 0;
	uint64_t loc = fde ? fde->start : 0, delta, reg, len;
	int64_t off;
	const uint8_t *block;
	bool ind;
	int err, plt;

	while (c->p < c->end && !c->bad) {
		uint8_t op = cur_u8(c);
		uint64_t newloc;

		delta = 0;
		newloc = loc;
		switch (op & 0xc0) {
		case 0x40: /* DW_CFA_advance_loc */
			delta = (uint64_t)(op & 0x3f) * cie->code_align;
			goto advance;
		case 0x80: /* DW_CFA_offset */
			off = factored(c, (int64_t)cur_uleb(c), cie->data_align);
			set_rule(st, op & 0x3f, RULE_OFFSET, off);
			continue;
		case 0xc0: /* DW_CFA_restore */
			if (!fde)
				return -EINVAL;
			if (state_rule(st, op & 0x3f))
				*state_rule(st, op & 0x3f) =
				    *state_rule((struct cfi_state *)&cie->init, op & 0x3f);
			continue;
		}
		switch (op) {
		case 0x00: /* DW_CFA_nop */
			continue;
		case 0x01: /* DW_CFA_set_loc */
			if (!fde)
				return -EINVAL;
			newloc = read_encoded(c, cie->fde_enc, s, &ind);
			if (ind || newloc < loc)
				return -EINVAL;
			delta = newloc - loc;
			goto advance;
		case 0x02: /* DW_CFA_advance_loc1 */
			delta = cur_bytes(c, 1, false) * cie->code_align;
			goto advance;
		case 0x03: /* DW_CFA_advance_loc2 */
			delta = cur_bytes(c, 2, false) * cie->code_align;
			goto advance;
		case 0x04: /* DW_CFA_advance_loc4 */
			delta = cur_bytes(c, 4, false) * cie->code_align;
			goto advance;
		case 0x1d: /* DW_CFA_MIPS_advance_loc8 (GNU) */
			delta = cur_bytes(c, 8, false);
			if (delta > UINT32_MAX)
				return -EINVAL;
			delta *= cie->code_align;
			goto advance;
		case 0x05: /* DW_CFA_offset_extended */
			reg = cur_uleb(c);
			off = factored(c, (int64_t)cur_uleb(c), cie->data_align);
			set_rule(st, reg, RULE_OFFSET, off);
			continue;
		case 0x11: /* DW_CFA_offset_extended_sf */
			reg = cur_uleb(c);
			off = factored(c, cur_sleb(c), cie->data_align);
			set_rule(st, reg, RULE_OFFSET, off);
			continue;
		case 0x2f: /* DW_CFA_GNU_negative_offset_extended */
			reg = cur_uleb(c);
			off = -factored(c, (int64_t)cur_uleb(c), cie->data_align);
			set_rule(st, reg, RULE_OFFSET, off);
			continue;
		case 0x06: /* DW_CFA_restore_extended */
			if (!fde)
				return -EINVAL;
			reg = cur_uleb(c);
			if (state_rule(st, reg))
				*state_rule(st, reg) =
				    *state_rule((struct cfi_state *)&cie->init, reg);
			continue;
		case 0x07: /* DW_CFA_undefined */
			set_rule(st, cur_uleb(c), RULE_UNDEF, 0);
			continue;
		case 0x08: /* DW_CFA_same_value */
			set_rule(st, cur_uleb(c), RULE_SAME, 0);
			continue;
		case 0x09: /* DW_CFA_register */
			reg = cur_uleb(c);
			set_rule(st, reg, RULE_REG, (int64_t)(cur_uleb(c) & 0xffff));
			continue;
		case 0x14: /* DW_CFA_val_offset */
			reg = cur_uleb(c);
			cur_uleb(c);
			set_rule(st, reg, RULE_OTHER, 0);
			continue;
		case 0x15: /* DW_CFA_val_offset_sf */
			reg = cur_uleb(c);
			cur_sleb(c);
			set_rule(st, reg, RULE_OTHER, 0);
			continue;
		case 0x10: /* DW_CFA_expression */
		case 0x16: /* DW_CFA_val_expression */
			reg = cur_uleb(c);
			len = cur_uleb(c);
			cur_skip(c, len);
			if (state_rule(st, reg))
				b->st.unsupported_expr++;
			set_rule(st, reg, RULE_OTHER, 0);
			continue;
		case 0x0a: /* DW_CFA_remember_state */
			if (depth == STATE_STACK_MAX)
				return -EINVAL;
			stack[depth++] = *st;
			continue;
		case 0x0b: /* DW_CFA_restore_state: the CFA rule is restored too (DWARF 5) */
			if (depth == 0)
				return -EINVAL;
			*st = stack[--depth];
			continue;
		case 0x0c: /* DW_CFA_def_cfa */
			st->cfa_how = CFA_REG;
			st->cfa_reg = cur_uleb(c);
			st->cfa_off = (int64_t)cur_uleb(c);
			continue;
		case 0x12: /* DW_CFA_def_cfa_sf */
			st->cfa_how = CFA_REG;
			st->cfa_reg = cur_uleb(c);
			st->cfa_off = factored(c, cur_sleb(c), cie->data_align);
			continue;
		case 0x0d: /* DW_CFA_def_cfa_register: only valid after a register rule */
			st->cfa_reg = cur_uleb(c);
			if (st->cfa_how != CFA_REG)
				st->cfa_how = CFA_OTHER;
			continue;
		case 0x0e: /* DW_CFA_def_cfa_offset */
			st->cfa_off = (int64_t)cur_uleb(c);
			if (st->cfa_how != CFA_REG)
				st->cfa_how = CFA_OTHER;
			continue;
		case 0x13: /* DW_CFA_def_cfa_offset_sf */
			st->cfa_off = factored(c, cur_sleb(c), cie->data_align);
			if (st->cfa_how != CFA_REG)
				st->cfa_how = CFA_OTHER;
			continue;
		case 0x0f: /* DW_CFA_def_cfa_expression */
			len = cur_uleb(c);
			block = c->p;
			cur_skip(c, len);
			if (c->bad)
				return -EINVAL;
			plt = match_plt_expr(block, len);
			if (plt >= 0) {
				st->cfa_how = CFA_PLT;
				st->plt = (uint16_t)plt;
			} else {
				st->cfa_how = CFA_OTHER;
				b->st.unsupported_expr++;
			}
			continue;
		case 0x2e: /* DW_CFA_GNU_args_size: RSP adjustment, CFA rule unaffected */
			cur_uleb(c);
			continue;
		default: /* DW_CFA_GNU_window_save (SPARC), unknown vendor ops */
			return -EINVAL;
		}
	advance:
		if (!fde || c->bad)
			return -EINVAL;
		if (delta == 0)
			continue;
		newloc = loc + delta;
		if (newloc < loc)
			return -EINVAL;
		if (loc < fde->end) {
			err = push_row(b, fde, loc, st, cie->signal);
			if (err)
				return err;
		}
		loc = newloc;
	}
	if (c->bad)
		return -EINVAL;
	if (fde && loc < fde->end)
		return push_row(b, fde, loc, st, cie->signal);
	return 0;
}

/* Parses the CIE at off into b->cie (cached). Returns 0 or -EINVAL. */
static int parse_cie(struct builder *b, const struct section_ctx *s, size_t off)
{
	struct cie *cie = &b->cie;
	struct cursor c = {.end = s->buf + s->size};
	const char *aug;
	uint64_t len, id;
	size_t augn;
	bool dwarf64 = false, ind;
	uint8_t ver;

	if (cie->off == off)
		return cie->ok ? 0 : -EINVAL;
	memset(cie, 0, sizeof(*cie));
	cie->off = off;
	/* Checked first: even computing a pointer past the section is undefined. */
	if (off >= s->size)
		return -EINVAL;
	c.p = s->buf + off;
	len = cur_bytes(&c, 4, false);
	if (len == 0xffffffff) {
		dwarf64 = true;
		len = cur_bytes(&c, 8, false);
	} else if (len >= 0xfffffff0 || len == 0) {
		return -EINVAL;
	}
	if (c.bad || len > (uint64_t)(c.end - c.p))
		return -EINVAL;
	c.end = c.p + len;
	id = cur_bytes(&c, dwarf64 ? 8 : 4, false);
	if (s->eh ? id != 0 : id != (dwarf64 ? ~0ULL : 0xffffffffULL))
		return -EINVAL;
	ver = cur_u8(&c);
	if (ver != 1 && ver != 3 && !(ver == 4 && !s->eh))
		return -EINVAL;
	aug = (const char *)c.p;
	augn = strnlen(aug, (size_t)(c.end - c.p));
	cur_skip(&c, augn + 1);
	if (c.bad)
		return -EINVAL;
	cie->addr_size = 8;
	if (ver == 4) {
		cie->addr_size = cur_u8(&c);
		if (cie->addr_size != 8 || cur_u8(&c) != 0) /* segment selector size */
			return -EINVAL;
	}
	cie->code_align = cur_uleb(&c);
	cie->data_align = cur_sleb(&c);
	if (ver == 1) {
		if (cur_u8(&c) != REG_RA)
			return -EINVAL;
	} else if (cur_uleb(&c) != REG_RA) {
		return -EINVAL;
	}
	if (c.bad || cie->code_align == 0 || cie->code_align > 64 || cie->data_align == 0 ||
	    cie->data_align > 64 || cie->data_align < -64)
		return -EINVAL;
	/* absptr for .debug_frame; .eh_frame FDEs without 'R' use absptr too */
	cie->fde_enc = PE_ABSPTR;
	if (augn > 0 && aug[0] == 'z') {
		uint64_t alen = cur_uleb(&c);
		const uint8_t *aend;
		size_t i;

		if (c.bad || alen > (uint64_t)(c.end - c.p))
			return -EINVAL;
		aend = c.p + alen; /* only now: a pointer past the entry would be undefined */
		cie->has_z = true;
		for (i = 1; i < augn; i++) {
			if (aug[i] == 'R') {
				cie->fde_enc = cur_u8(&c);
			} else if (aug[i] == 'L') {
				cur_u8(&c); /* LSDA encoding: the pointer is skipped with 'z' */
			} else if (aug[i] == 'P') {
				uint8_t penc = cur_u8(&c);

				if (penc == PE_OMIT) {
					c.bad = true;
				} else {
					struct section_ctx anyrel = *s;

					/* only the size matters: accept any base */
					anyrel.text_addr = anyrel.got_addr = 1;
					read_encoded(&c, penc, &anyrel, &ind);
				}
			} else if (aug[i] == 'S') {
				cie->signal = true;
			} else {
				/* unknown: 'z' says how long the data is; stop reading it (as GCC)
				 */
				break;
			}
			if (c.bad || c.p > aend)
				return -EINVAL;
		}
		c.p = aend;
	} else if (augn > 0) {
		return -EINVAL; /* without 'z' the layout of the rest is unknown */
	}
	if (cie->fde_enc == PE_OMIT || (cie->fde_enc & PE_FMT_MASK) == PE_ULEB128 ||
	    (cie->fde_enc & PE_FMT_MASK) == PE_SLEB128 || (cie->fde_enc & PE_INDIRECT))
		return -EINVAL; /* not an address an FDE can start at */
	cie->insns = c.p;
	cie->insns_end = c.end;
	/* The initial state: ra and callee-saved registers unmentioned, CFA undefined. */
	memset(&cie->init, 0, sizeof(cie->init));
	if (interpret(b, cie, &c, s, &cie->init, NULL))
		return -EINVAL;
	cie->ok = true;
	b->st.cies++;
	return 0;
}

static bool inside_exec(const struct builder *b, uint64_t start, uint64_t end)
{
	size_t i;

	if (b->nexec == 0)
		return true; /* no section headers to check against */
	for (i = 0; i < b->nexec; i++)
		if (start >= b->exec[i].start && end <= b->exec[i].end)
			return true;
	return false;
}

/* Interprets one FDE whose CIE pointer has been read; c spans the rest of the entry. */
static int parse_fde(struct builder *b, const struct section_ctx *s, struct cursor *c,
		     size_t cie_off)
{
	struct cfi_state st;
	struct fde_rec rec;
	uint64_t start, range, alen;
	bool ind;
	int err;

	if (parse_cie(b, s, cie_off)) {
		b->st.skipped_bad_cie++;
		return 0;
	}
	start = read_encoded(c, b->cie.fde_enc, s, &ind);
	range = read_range(c, b->cie.fde_enc);
	if (b->cie.has_z) {
		alen = cur_uleb(c);
		cur_skip(c, alen);
	}
	if (c->bad || ind || start + range < start) {
		b->st.skipped_bad_fde++;
		return 0;
	}
	if (range == 0) {
		b->st.skipped_empty++;
		return 0;
	}
	if (!inside_exec(b, start, start + range)) {
		b->st.skipped_outside_text++;
		return 0;
	}
	rec.start = start;
	rec.end = start + range;
	rec.first = (uint32_t)b->nrows;
	st = b->cie.init;
	err = interpret(b, &b->cie, c, s, &st, &rec);
	if (err == -ENOMEM)
		return err;
	if (err) {
		b->nrows = rec.first; /* drop the FDE's rows */
		b->st.skipped_bad_fde++;
		return 0;
	}
	/* Row pcs are 32-bit offsets: assemble() drops such an FDE unread (outside text). */
	if (range > (1ull << 32))
		b->nrows = rec.first;
	rec.count = (uint32_t)(b->nrows - rec.first);
	if (b->nfdes == b->capfdes) {
		size_t cap = b->capfdes ? b->capfdes * 2 : 256;
		struct fde_rec *f = realloc(b->fdes, cap * sizeof(*f));

		if (!f)
			return -ENOMEM;
		b->fdes = f;
		b->capfdes = cap;
	}
	b->fdes[b->nfdes++] = rec;
	if (b->cie.signal)
		b->st.signal_fdes++;
	return 0;
}

/* One pass over the entries of the section. Each iteration consumes at least 4 bytes. */
static int parse_section(struct builder *b, const struct section_ctx *s)
{
	size_t off = 0;
	int err;

	b->cie.off = SIZE_MAX;
	while (off < s->size) {
		struct cursor c = {.p = s->buf + off, .end = s->buf + s->size};
		uint64_t len, id;
		size_t id_off, next;
		bool dwarf64 = false;

		len = cur_bytes(&c, 4, false);
		if (c.bad) {
			b->st.truncated++;
			break;
		}
		if (len == 0) {
			/* terminator; like readelf, keep reading whatever follows it */
			b->st.terminators++;
			off += 4;
			continue;
		}
		if (len == 0xffffffff) {
			dwarf64 = true;
			len = cur_bytes(&c, 8, false);
		} else if (len >= 0xfffffff0) {
			b->st.truncated++; /* reserved: the rest cannot be delimited */
			break;
		}
		if (c.bad || len > (uint64_t)(c.end - c.p)) {
			b->st.truncated++;
			break;
		}
		c.end = c.p + len;
		next = (size_t)(c.end - s->buf);
		id_off = (size_t)(c.p - s->buf);
		id = cur_bytes(&c, dwarf64 ? 8 : 4, false);
		if (c.bad) {
			b->st.skipped_bad_fde++;
		} else if (s->eh ? id == 0 : id == (dwarf64 ? ~0ULL : 0xffffffffULL)) {
			/* CIE: parsed when an FDE refers to it */
		} else if (s->eh && id > id_off) {
			b->st.skipped_bad_fde++;
		} else {
			err = parse_fde(b, s, &c, s->eh ? id_off - (size_t)id : (size_t)id);
			if (err)
				return err;
		}
		off = next;
	}
	return 0;
}

static int cmp_fde(const void *a, const void *b)
{
	const struct fde_rec *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	/* The same range twice (.eh_frame and .debug_frame): the one parsed first. */
	if (x->first != y->first)
		return x->first < y->first ? -1 : 1;
	return 0;
}

/* Rows out of assemble(): counted only, or handed to a sink in pieces of ROW_BUF rows. */
#define ROW_BUF 4096

struct row_writer {
	const struct cfi_sink *sink; /* NULL: count only */
	struct unwind_row buf[ROW_BUF];
	/* The last two rows are kept back: the last may go (a gap marker), then the one before
	 * is compared with the next row. */
	size_t nbuf;
	size_t n; /* rows so far */
	int err;
};

static const struct unwind_row *writer_last(const struct row_writer *w)
{
	return w->nbuf ? &w->buf[w->nbuf - 1] : NULL;
}

static void writer_drop_last(struct row_writer *w)
{
	w->nbuf--;
	w->n--;
}

/* Writes out all but the last two rows (or all of them with @all). */
static void writer_flush(struct row_writer *w, bool all)
{
	size_t k = all ? w->nbuf : w->nbuf - 2;

	if (w->sink && k && !w->err)
		w->err = w->sink->write(w->sink->ctx, w->buf, (uint32_t)k);
	memmove(w->buf, w->buf + k, (w->nbuf - k) * sizeof(*w->buf));
	w->nbuf -= k;
}

static void writer_push(struct row_writer *w, struct unwind_row r)
{
	if (w->nbuf == ROW_BUF)
		writer_flush(w, false);
	w->buf[w->nbuf++] = r;
	w->n++;
}

/*
 * Sorts FDEs, drops overlaps, merges rows and adds the gap markers. Run twice over the same
 * sorted FDEs: first counting (@count: stats are gathered in this pass), then writing to @w.
 */
static void assemble_pass(struct builder *b, uint64_t base, struct row_writer *w, bool count)
{
	uint64_t prev_end = 0;
	size_t i, j;

	for (i = 0; i < b->nfdes; i++) {
		const struct fde_rec *f = &b->fdes[i];
		const struct unwind_row *last = writer_last(w);

		if (w->n > 0 && f->start < prev_end) {
			if (count)
				b->st.skipped_overlap++;
			continue;
		}
		if (f->end - base - 1 > UINT32_MAX) {
			if (count)
				b->st.skipped_outside_text++;
			continue;
		}
		/* The previous FDE's gap marker goes when this one starts right there. */
		if (last && last->kind == UNWIND_KIND_FP && last->pc == f->start - base)
			writer_drop_last(w);
		for (j = f->first; j < f->first + f->count; j++) {
			struct unwind_row r = b->rows[j];

			last = writer_last(w);
			if (last && row_same_rule(last, &r))
				continue;
			r.pc = (uint32_t)(f->start + r.pc - base);
			writer_push(w, r);
			if (!count)
				continue;
			if (r.kind == UNWIND_KIND_UNSUPPORTED)
				b->st.unsupported_rows++;
			else if (r.kind == UNWIND_KIND_PLT)
				b->st.plt_rows++;
		}
		if (count)
			b->st.fdes++;
		prev_end = f->end;
		if (f->end - base <= UINT32_MAX)
			writer_push(w, (struct unwind_row){.pc = (uint32_t)(f->end - base),
							   .kind = UNWIND_KIND_FP});
	}
	writer_flush(w, true);
}

/*
 * Sorts the FDEs and hands the table to @sink: begin() with the row count and base, then the
 * rows in order. No copy of the whole table is made here: the sink decides where rows go.
 */
static int assemble(struct builder *b, const struct cfi_sink *sink)
{
	struct row_writer *w;
	uint64_t lo, hi = 0, base;
	size_t i;
	int err;

	if (b->nfdes)
		qsort(b->fdes, b->nfdes, sizeof(*b->fdes), cmp_fde);
	for (i = 0; i < b->nfdes; i++)
		if (b->fdes[i].end > hi)
			hi = b->fdes[i].end;
	lo = b->nfdes ? b->fdes[0].start : 0;
	base = hi - 1 <= UINT32_MAX ? 0 : lo & ~0xfffULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	assemble_pass(b, base, w, true);
	b->st.rows = w->n;
	if (w->n > UNWIND_MAX_ROWS) {
		free(w);
		return -E2BIG;
	}
	err = sink->begin(sink->ctx, (uint32_t)w->n, base, &b->st);
	if (!err && w->n) {
		memset(w, 0, sizeof(*w));
		w->sink = sink;
		assemble_pass(b, base, w, false);
		err = w->err;
	}
	free(w);
	return err;
}

static Elf_Scn *find_section(Elf *elf, size_t shstrndx, const char *name, GElf_Shdr *shdr)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, shdr))
			continue;
		n = elf_strptr(elf, shstrndx, shdr->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

/* Opens an x86-64 ELF64 file; returns NULL with *err set. */
static Elf *open_elf(int fd, size_t *shstrndx, int *err)
{
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	GElf_Ehdr eh;

	if (!elf || elf_kind(elf) != ELF_K_ELF || gelf_getclass(elf) != ELFCLASS64 ||
	    !gelf_getehdr(elf, &eh) || eh.e_machine != EM_X86_64 ||
	    elf_getshdrstrndx(elf, shstrndx)) {
		elf_end(elf);
		*err = -ENOEXEC;
		return NULL;
	}
	return elf;
}

/* Section data, decompressed if needed; NULL when missing, empty or unreadable (*bad set). */
static Elf_Data *section_data(Elf *elf, size_t shstrndx, const char *name, GElf_Shdr *shdr,
			      bool *bad)
{
	Elf_Scn *scn = find_section(elf, shstrndx, name, shdr);
	Elf_Data *d;

	if (!scn || shdr->sh_type == SHT_NOBITS || shdr->sh_size == 0)
		return NULL;
	if ((shdr->sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0) {
		*bad = true;
		return NULL;
	}
	d = elf_getdata(scn, NULL);
	if (!d || !d->d_buf || d->d_size == 0) {
		*bad = true;
		return NULL;
	}
	return d;
}

static int collect_exec(struct builder *b, Elf *elf, size_t shstrndx, struct section_ctx *s)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t n = 0;

	while ((scn = elf_nextscn(elf, scn)))
		n++;
	b->exec = calloc(n ? n : 1, sizeof(*b->exec));
	if (!b->exec)
		return -ENOMEM;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if ((sh.sh_flags & SHF_EXECINSTR) && sh.sh_size &&
		    sh.sh_addr + sh.sh_size > sh.sh_addr)
			b->exec[b->nexec++] =
			    (struct exec_range){sh.sh_addr, sh.sh_addr + sh.sh_size};
		if (name && !strcmp(name, ".text"))
			s->text_addr = sh.sh_addr;
		if (name && !strcmp(name, ".got"))
			s->got_addr = sh.sh_addr;
	}
	return 0;
}

int cfi__build_fd_stream(int fd, const char *debug_path, const struct cfi_sink *sink)
{
	struct builder b = {0};
	struct section_ctx s = {0};
	Elf *elf = NULL, *dbg = NULL;
	struct stat dst;
	int dfd = -1, err = 0;
	size_t shstrndx, dshstrndx;
	Elf_Data *d;
	GElf_Shdr sh;
	bool bad = false;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOEXEC;
	elf = open_elf(fd, &shstrndx, &err);
	if (!elf)
		goto cleanup;
	err = collect_exec(&b, elf, shstrndx, &s);
	if (err)
		goto cleanup;
	if ((d = section_data(elf, shstrndx, ".eh_frame", &sh, &bad))) {
		s.eh = true;
		b.st.source = CFI_SOURCE_EH_FRAME;
	} else if ((d = section_data(elf, shstrndx, ".debug_frame", &sh, &bad))) {
		b.st.source = CFI_SOURCE_DEBUG_FRAME;
	} else if (debug_path) {
		dfd = regfile__open(debug_path, &dst);
		if (dfd < 0) {
			err = dfd;
			goto cleanup;
		}
		dbg = open_elf(dfd, &dshstrndx, &err);
		if (!dbg)
			goto cleanup;
		d = section_data(dbg, dshstrndx, ".debug_frame", &sh, &bad);
		b.st.source = CFI_SOURCE_DEBUG_FILE;
	}
	if (!d) {
		err = bad ? -EBADMSG : -ENODATA;
		goto cleanup;
	}
	s.buf = d->d_buf;
	s.size = d->d_size;
	s.addr = sh.sh_addr;
	err = parse_section(&b, &s);
	if (err)
		goto cleanup;
	/*
	 * Both: .eh_frame covers what a C compiler built, .debug_frame the rest (a cgo program:
	 * gcc's code and crt files in .eh_frame, Go's own functions only in .debug_frame). Where
	 * they overlap the .eh_frame FDE wins (parsed first: cmp_fde()).
	 */
	if (s.eh && (d = section_data(elf, shstrndx, ".debug_frame", &sh, &bad))) {
		s.eh = false;
		s.buf = d->d_buf;
		s.size = d->d_size;
		s.addr = sh.sh_addr;
		b.st.debug_frame_too = true;
		err = parse_section(&b, &s);
		if (err)
			goto cleanup;
	}
	/* The section (read into memory, or inflated) is not needed to assemble: free it first. */
	elf_end(dbg);
	elf_end(elf);
	dbg = elf = NULL;
	err = assemble(&b, sink);
cleanup:
	free(b.rows);
	free(b.fdes);
	free(b.exec);
	elf_end(dbg);
	elf_end(elf);
	if (dfd >= 0)
		close(dfd);
	return err;
}

int cfi__build_eh_frames(const struct cfi_eh_frame *v, size_t n, const struct cfi_sink *sink)
{
	struct builder b = {0};
	int err = 0;

	b.exec = calloc(1, sizeof(*b.exec));
	if (!b.exec)
		return -ENOMEM;
	b.st.source = CFI_SOURCE_EH_FRAME;
	for (size_t i = 0; i < n && !err; i++) {
		struct section_ctx s = {
		    .buf = v[i].buf, .size = v[i].size, .addr = v[i].addr, .eh = true};

		/* Only the code this section describes: an FDE elsewhere is not this code's. */
		b.exec[0] = (struct exec_range){v[i].code_start, v[i].code_end};
		b.nexec = 1;
		err = parse_section(&b, &s);
	}
	if (!err)
		err = assemble(&b, sink);
	free(b.rows);
	free(b.fdes);
	free(b.exec);
	return err;
}

/* The sink of cfi__build_fd(): a table in one array. */
static int table_begin(void *ctx, uint32_t count, uint64_t base, const struct cfi_stats *st)
{
	struct cfi_table *t = ctx;

	t->rows = calloc(count ? count : 1, sizeof(*t->rows));
	if (!t->rows)
		return -ENOMEM;
	t->base = base;
	t->stats = *st;
	return 0;
}

static int table_write(void *ctx, const struct unwind_row *rows, uint32_t n)
{
	struct cfi_table *t = ctx;

	memcpy(t->rows + t->count, rows, n * sizeof(*rows));
	t->count += n;
	return 0;
}

int cfi__build_fd(int fd, const char *debug_path, struct cfi_table **out)
{
	struct cfi_table *t = calloc(1, sizeof(*t));
	struct cfi_sink sink = {.begin = table_begin, .write = table_write, .ctx = t};
	int err;

	*out = NULL;
	if (!t)
		return -ENOMEM;
	err = cfi__build_fd_stream(fd, debug_path, &sink);
	if (err) {
		cfi_table__free(t);
		return err;
	}
	*out = t;
	return 0;
}

int cfi__build(const char *path, const char *debug_path, struct cfi_table **out)
{
	struct stat st;
	int fd, err;

	*out = NULL;
	fd = regfile__open(path, &st);
	if (fd < 0)
		return fd;
	err = cfi__build_fd(fd, debug_path, out);
	close(fd);
	return err;
}

const struct unwind_row *cfi_table__rows(const struct cfi_table *t)
{
	return t->rows;
}

uint32_t cfi_table__count(const struct cfi_table *t)
{
	return t->count;
}

size_t cfi_table__bytes(const struct cfi_table *t)
{
	return (size_t)t->count * sizeof(struct unwind_row);
}

uint64_t cfi_table__base(const struct cfi_table *t)
{
	return t->base;
}

const struct cfi_stats *cfi_table__stats(const struct cfi_table *t)
{
	return &t->stats;
}

const struct unwind_row *cfi_table__lookup(const struct cfi_table *t, uint64_t vaddr)
{
	int i;

	if (vaddr < t->base)
		return NULL;
	i = unwind__find_row(t->rows, t->count, vaddr - t->base, UNWIND_MAX_ROWS);
	return i < 0 ? NULL : &t->rows[i];
}

void cfi_table__free(struct cfi_table *t)
{
	if (!t)
		return;
	free(t->rows);
	free(t);
}

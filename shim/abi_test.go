package shim

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/bayesperf/bayesperf/internal/testutil"
)

// cName turns a Go field name into the C field name of bayesperf_abi.h (GroupFd ->
// group_fd, CPU -> cpu).
func cName(s string) string {
	var b strings.Builder
	r := []rune(s)
	for i, c := range r {
		if unicode.IsUpper(c) && i > 0 && unicode.IsLower(r[i-1]) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}

// TestABIMatchesC compiles a C program against bayesperf_abi.h that prints the size of
// every struct, the offset of every field and the value of every constant, and checks them
// against this package. It needs gcc (a build dependency of the shim).
func TestABIMatchesC(t *testing.T) {
	types := []struct {
		c   string
		gov any
	}{
		{"bp_msg_hdr", MsgHdr{}},
		{"bp_hello", Hello{}},
		{"bp_hello_reply", HelloReply{}},
		{"bp_register", Register{}},
		{"bp_register_reply", RegisterReply{}},
		{"bp_handle", Handle{}},
		{"bp_map", Map{}},
		{"bp_status", Status{}},
		{"bp_client_page", ClientPage{}},
		{"bp_mirror_value", MirrorValue{}},
		{"bp_mirror_hdr", MirrorHdr{}},
		{"bp_mirror_page", MirrorPage{}},
	}
	consts := map[string]uint64{
		"BP_MSG_MAGIC":            uint64(MsgMagic),
		"BP_ABI_VERSION":          uint64(ABIVersion),
		"BP_MSG_HELLO":            uint64(MsgHello),
		"BP_MSG_REGISTER":         uint64(MsgRegister),
		"BP_MSG_UNREGISTER":       uint64(MsgUnregister),
		"BP_MSG_REFRESH":          uint64(MsgRefresh),
		"BP_MSG_REPLY":            uint64(MsgReply),
		"BP_MSG_MAP":              uint64(MsgMap),
		"BP_MSG_UNMAP":            uint64(MsgUnmap),
		"BP_MSG_FLUSH":            uint64(MsgFlush),
		"BP_FLUSH_PAUSED":         uint64(FlushPaused),
		"BP_HELLO_F_KERNEL_EXACT": uint64(HelloKernelExact),
		"BP_ATTR_MAX":             AttrMax,
		"BP_PAGE_SIZE":            PageSize,
		"BP_CLIENT_MAGIC":         uint64(ClientMagic),
		"BP_CLIENT_SHARDS":        ClientShards,
		"BP_CLIENT_IOCTLS":        ClientIoctls,
		"BP_MIRROR_MAGIC":         uint64(MirrorMagic),
		"BP_MIRROR_EMPTY":         uint64(MirrorEmpty),
		"BP_MIRROR_OK":            uint64(MirrorOK),
		"BP_MIRROR_KERNEL":        uint64(MirrorKernel),
		"BP_MIRROR_F_FINAL":       uint64(MirrorFinal),
		"BP_MIRROR_F_SYNC":        uint64(MirrorSync),
		"BP_MIRROR_MAX_VALUES":    uint64(MirrorMaxValues),
	}
	want := map[string]uint64{}
	var src strings.Builder
	src.WriteString("#include <stdio.h>\n#include <stddef.h>\n#include \"bayesperf_abi.h\"\nint main(void) {\n")
	for _, ty := range types {
		rt := reflect.TypeOf(ty.gov)
		key := "sizeof " + ty.c
		want[key] = uint64(rt.Size())
		fmt.Fprintf(&src, "printf(\"%s %%zu\\n\", sizeof(struct %s));\n", key, ty.c)
		for i := range rt.NumField() {
			f := rt.Field(i)
			key := "offsetof " + ty.c + "." + cName(f.Name)
			want[key] = uint64(f.Offset)
			fmt.Fprintf(&src, "printf(\"%s %%zu\\n\", offsetof(struct %s, %s));\n", key, ty.c, cName(f.Name))
		}
	}
	for name, v := range consts {
		want["const "+name] = v
		fmt.Fprintf(&src, "printf(\"const %s %%llu\\n\", (unsigned long long)(%s));\n", name, name)
	}
	src.WriteString("return 0;\n}\n")
	inc, err := filepath.Abs("preload")
	if err != nil {
		t.Fatal(err)
	}
	out := testutil.RunC(t, "abi", src.String(), "-Wall", "-Werror", "-I", inc)
	seen := 0
	for line := range strings.Lines(string(out)) {
		line = strings.TrimSpace(line)
		i := strings.LastIndexByte(line, ' ')
		key := line[:i]
		got, err := strconv.ParseUint(line[i+1:], 10, 64)
		if err != nil {
			t.Fatalf("parse probe line %q: %v", line, err)
		}
		if w, ok := want[key]; !ok {
			t.Errorf("probe printed unknown key %q", key)
		} else if got != w {
			t.Errorf("%s: C says %d, Go says %d", key, got, w)
		}
		seen++
	}
	if seen != len(want) {
		t.Errorf("probe printed %d lines, want %d", seen, len(want))
	}
}

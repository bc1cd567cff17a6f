#!/usr/bin/env bash
# Run GNU tar 1.34's own testsuite (from Debian's tar source) against qtar.
# Create-mode invocations go to qtar, everything else to the GNU tar built
# from the same source. See tests/gnu-tar/README.md.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
DEB_VERSION=${QTAR_GNUSUITE_DEB_VERSION:-1.34+dfsg-1.2+deb12u1}
UPSTREAM_VERSION=1.34
CACHE=${QTAR_GNUSUITE_CACHE:-$REPO/target/gnu-tar-suite}
JOBS=${QTAR_GNUSUITE_JOBS:-2}
BASELINE_FILE=$HERE/baseline
KNOWN_FILE=$HERE/known-failures

# apt packages: to fetch and build tar and its testsuite, and the tools the
# tests use (their tests are skipped when a tool is missing).
BUILD_PACKAGES=(dpkg-dev build-essential autoconf libacl1-dev libselinux1-dev xz-utils)
TEST_PACKAGES=(acl attr libcap2-bin util-linux gzip bzip2 xz-utils lzip lzop zstd)

MODE=check
QTAR_PATH=${QTAR:-}

usage() {
	cat <<EOF
usage: tests/gnu-tar/run.sh [options]

Build GNU tar $UPSTREAM_VERSION and its testsuite from Debian's source ($DEB_VERSION)
and run the testsuite with \`tar' resolving to a wrapper that sends create
mode (and --version) to qtar and everything else to the built GNU tar.

options:
  --qtar PATH          the qtar binary (default: \$QTAR, else build it with
                       \`cargo build --release --bin qtar')
  --update-baseline    run, then write tests/gnu-tar/baseline and
                       tests/gnu-tar/known-failures from the results
  --reference PATH     run with PATH (a GNU tar) as qtar and write
                       tests/gnu-tar/reference-gnu-tar.txt
  --order-probe        run with a qtar stand-in that reverses the order of
                       file operands and reads directories in inode order;
                       lists the tests that depend on member order
  --wrapper-test       only build, then check the wrapper's routing against
                       GNU tar's own option parser
  --jobs N             parallel tests (default: \$QTAR_GNUSUITE_JOBS or 2)
  -h, --help           this text

environment: QTAR, QTAR_GNUSUITE_CACHE (default target/gnu-tar-suite),
QTAR_GNUSUITE_JOBS, QTAR_GNUSUITE_USER (user that runs the tests when
started as root; default nobody), QTAR_GNUSUITE_DEB_VERSION.
EOF
}

die() {
	echo "gnu-tar-suite: error: $*" >&2
	exit 1
}

log() {
	echo "gnu-tar-suite: $*" >&2
}

while (($# > 0)); do
	case $1 in
	--qtar)
		(($# >= 2)) || die "--qtar needs a path"
		QTAR_PATH=$2
		shift 2
		;;
	--update-baseline) MODE=update-baseline && shift ;;
	--reference)
		(($# >= 2)) || die "--reference needs a path"
		MODE=reference
		QTAR_PATH=$2
		shift 2
		;;
	--order-probe) MODE=order-probe && shift ;;
	--wrapper-test) MODE=wrapper-test && shift ;;
	--jobs)
		(($# >= 2)) || die "--jobs needs a number"
		JOBS=$2
		shift 2
		;;
	-h | --help)
		usage
		exit 0
		;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
done
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || die "--jobs: '$JOBS' is not a positive number"

IS_ROOT=0
[[ $(id -u) == 0 ]] && IS_ROOT=1

# ---------------------------------------------------------------------------
# 1. Packages and Debian's tar source.

missing_packages() {
	local p status
	for p in "$@"; do
		status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) || status=
		[[ $status == "install ok installed" ]] || echo "$p"
	done
}

ensure_packages() {
	local -a missing
	mapfile -t missing < <(missing_packages "$@")
	((${#missing[@]} == 0)) && return
	((IS_ROOT)) || die "missing apt packages: ${missing[*]} (install them as root)"
	log "installing apt packages: ${missing[*]}"
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >"$CACHE/apt-install.log" 2>&1; then
		apt-get update >>"$CACHE/apt-install.log" 2>&1 || die "apt-get update failed, see $CACHE/apt-install.log"
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >>"$CACHE/apt-install.log" 2>&1 ||
			die "apt-get install ${missing[*]} failed, see $CACHE/apt-install.log"
	fi
}

have_tar_source_index() {
	local index
	index=$(apt-cache showsrc tar 2>/dev/null) || return 1
	grep -q "^Version: $DEB_VERSION\$" <<<"$index"
}

# Add deb-src entries derived from the machine's deb entries: a fresh Debian
# image has only `Types: deb`.
ensure_deb_src() {
	have_tar_source_index && return
	((IS_ROOT)) || die "no deb-src entry for tar $DEB_VERSION; as root this script adds one"
	# apt's own idea of its source files (APT_CONFIG may move them).
	local parts list
	parts=$(apt-config shell X Dir::Etc::sourceparts/d | sed -n "s/^X='\(.*\)'\$/\1/p")
	list=$(apt-config shell X Dir::Etc::sourcelist/f | sed -n "s/^X='\(.*\)'\$/\1/p")
	[[ -d $parts ]] || die "apt's Dir::Etc::sourceparts '$parts' is not a directory"
	local deb822=${parts%/}/debian.sources
	local out=${parts%/}/qtar-gnusuite-src
	if [[ -f $deb822 ]]; then
		log "adding $out.sources (deb-src copy of $deb822)"
		sed -e 's/^Types:.*$/Types: deb-src/' "$deb822" >"$out.sources"
	elif [[ -f $list ]] && grep -q '^deb ' "$list"; then
		log "adding $out.list (deb-src copy of $list)"
		sed -n -e 's/^deb /deb-src /p' "$list" >"$out.list"
	else
		die "cannot derive a deb-src entry: neither $deb822 nor deb lines in $list"
	fi
	apt-get update >"$CACHE/apt-update.log" 2>&1 || die "apt-get update failed, see $CACHE/apt-update.log"
	have_tar_source_index || die "apt has no source package tar $DEB_VERSION even after adding deb-src"
}

SRC=$CACHE/tar-$DEB_VERSION
fetch_source() {
	[[ -f $SRC/.qtar-extracted ]] && return
	ensure_deb_src
	local dl=$CACHE/download
	rm -rf "$dl" "$SRC"
	mkdir -p "$dl"
	log "downloading Debian source tar=$DEB_VERSION"
	(cd "$dl" && apt-get source --download-only "tar=$DEB_VERSION") >"$CACHE/apt-source.log" 2>&1 ||
		die "apt-get source tar=$DEB_VERSION failed, see $CACHE/apt-source.log"
	local dsc
	dsc=$(find "$dl" -maxdepth 1 -name "tar_*.dsc" -print -quit)
	[[ -n $dsc ]] || die "no .dsc downloaded in $dl"
	# dpkg-source -x verifies the checksums and applies debian/patches.
	# (Extracting next to the .dsc: it links the .orig tarball beside the
	# target directory.)
	dpkg-source -x "$dsc" "$dl/src" >"$CACHE/dpkg-source.log" 2>&1 ||
		die "dpkg-source -x $dsc failed, see $CACHE/dpkg-source.log"
	grep -q "^AC_INIT(\[GNU tar\], *\[$UPSTREAM_VERSION\]" "$dl/src/configure.ac" ||
		die "$dl/src/configure.ac is not GNU tar $UPSTREAM_VERSION"
	touch "$dl/src/.qtar-extracted"
	mv "$dl/src" "$SRC"
}

# ---------------------------------------------------------------------------
# 2. Build GNU tar and its testsuite.

build_tar() {
	[[ -f $SRC/.qtar-built ]] && return
	log "configuring GNU tar in $SRC"
	# Debian's configure flags (debian/rules), without --prefix: nothing is
	# installed. configure refuses to run as root unless forced.
	(cd "$SRC" && FORCE_UNSAFE_CONFIGURE=1 RSH=/usr/bin/rsh nice -n 10 ./configure \
		--enable-backup-scripts --with-lzma=xz --disable-silent-rules) >"$CACHE/configure.log" 2>&1 ||
		die "configure failed, see $CACHE/configure.log"
	log "building GNU tar"
	nice -n 10 make -C "$SRC" -j"$JOBS" >"$CACHE/make.log" 2>&1 || die "make failed, see $CACHE/make.log"
	# The test programs and tests/testsuite: Debian patches tests/listed03.at,
	# so autom4te (autoconf) regenerates the shipped testsuite script.
	nice -n 10 make -C "$SRC/tests" -j"$JOBS" atconfig atlocal testsuite genfile checkseekhole ckmtime \
		>"$CACHE/make-tests.log" 2>&1 || die "building the testsuite failed, see $CACHE/make-tests.log"
	# shellcheck disable=SC2016 # a literal line of the testsuite
	grep -q 'test `uname` = "Linux" || exit 77' "$SRC/tests/testsuite" ||
		die "$SRC/tests/testsuite lacks Debian's listed03 patch: it was not regenerated"
	local v
	v=$("$SRC/src/tar" --version | sed -n 1p)
	[[ $v == "tar (GNU tar) $UPSTREAM_VERSION" ]] || die "built $SRC/src/tar says '$v'"
	touch "$SRC/.qtar-built"
}

# ---------------------------------------------------------------------------
# 3. The wrapper.

WRAPDIR=$CACHE/wrapper
GNUTAR=$SRC/src/tar

shell_quote() {
	printf '%q' "$1"
}

# Option tables from GNU tar's --help: each option line lists aliases
# ("-f, --file=ARCHIVE"); the argument shown applies to all of them.
option_tables() {
	"$GNUTAR" --help | awk '
		# Option lines start with 2 to 6 spaces and a dash; continuation
		# lines of descriptions are indented further. (mawk: no {m,n}.)
		/^ +-/ && match($0, /[^ ]/) <= 7 {
			# The spec is a ", "-separated list of -X, --name, --name=ARG
			# and --name[=ARG]; the description follows after spaces.
			rest = substr($0, match($0, /[^ ]/))
			spec = ""
			while (match(rest, /^-[^ ,]+/)) {
				spec = spec (spec == "" ? "" : ", ") substr(rest, 1, RLENGTH)
				rest = substr(rest, RLENGTH + 1)
				if (substr(rest, 1, 2) != ", ") break
				rest = substr(rest, 3)
			}
			kind = "n"
			if (spec ~ /\[=/) kind = "o"
			else if (spec ~ /=/ || spec ~ /^-[^-] [A-Z]/) kind = "r"
			n = split(spec, parts, /, /)
			for (i = 1; i <= n; i++) {
				p = parts[i]
				if (p ~ /^--/) {
					name = substr(p, 3)
					sub(/[[=].*$/, "", name)
					print "long", name, kind
				} else if (p ~ /^-[^-]/) {
					print "short", substr(p, 2, 1), kind
				}
			}
		}'
}

make_wrapper() {
	local qtar=$1 dir=$2 log=$3 probe=${4:-0}
	local tables short_arg="" short_all="" long_names="" long_kinds="" type name kind
	tables=$(option_tables)
	while read -r type name kind; do
		if [[ $type == short ]]; then
			short_all+=$name
			[[ $kind == r ]] && short_arg+=$name
		elif [[ $type == long ]]; then
			long_names+=" $(shell_quote "$name")"
			long_kinds+=" $kind"
		fi
	done <<<"$tables"
	[[ $short_arg == *f* && $short_arg == *C* && $long_names == *" create"* ]] ||
		die "could not read the option table from '$GNUTAR --help'"
	mkdir -p "$dir"
	local tmpl
	tmpl=$(<"$HERE/wrapper.sh.in")
	tmpl=${tmpl//@QTAR@/$(shell_quote "$qtar")}
	tmpl=${tmpl//@GNUTAR@/$(shell_quote "$GNUTAR")}
	tmpl=${tmpl//@ROUTE_LOG@/$(shell_quote "$log")}
	tmpl=${tmpl//@ORDER_PROBE@/$probe}
	tmpl=${tmpl//@SHORT_ARG@/$(shell_quote "$short_arg")}
	tmpl=${tmpl//@SHORT_ALL@/$(shell_quote "$short_all")}
	tmpl=${tmpl//@LONG_NAMES@/${long_names# }}
	tmpl=${tmpl//@LONG_KINDS@/${long_kinds# }}
	printf '%s\n' "$tmpl" >"$dir/tar.tmp"
	chmod 755 "$dir/tar.tmp"
	mv "$dir/tar.tmp" "$dir/tar"
}

# GNU tar's own verdict on which mode ARGS select: TAR_OPTIONS is parsed
# before the command line, and a second, different mode option is a usage
# error ("You may not specify more than one ..."), while repeating the same
# one is not. So ARGS select create mode exactly when they clash with
# TAR_OPTIONS=-x and do not clash with TAR_OPTIONS=-c.
oracle_route() {
	local scratch=$1
	shift
	local clash_x clash_c
	clash_x=$(cd "$scratch" && TAR_OPTIONS=-x timeout 10 "$GNUTAR" "$@" </dev/null 2>&1 >/dev/null | grep -c 'You may not specify more than one') || true
	clash_c=$(cd "$scratch" && TAR_OPTIONS=-c timeout 10 "$GNUTAR" "$@" </dev/null 2>&1 >/dev/null | grep -c 'You may not specify more than one') || true
	if [[ $clash_x != 0 && $clash_c == 0 ]]; then
		echo qtar
	else
		echo gnu
	fi
}

# Check the wrapper's routing rule against GNU tar's option parser on
# command lines chosen to trip a naive scan for `c`.
wrapper_test() {
	local scratch=$CACHE/wrapper-test
	rm -rf "$scratch"
	mkdir -p "$scratch/wrap" "$scratch/cwd"
	make_wrapper /bin/false "$scratch/wrap" /dev/null
	local -a cases=(
		"cf a.tar dir" "cvf a.tar dir" "fc a.tar dir" "xf a.tar" "tvf a.tar"
		"-cf a.tar dir" "-c -f a.tar dir" "-f a.tar -c dir" "-f a.tar dir -c"
		"-xf a.tar" "-fc" "-f c -x" "-vfc -x" "-xvf a.tar c" "-Cc -x"
		"-C -c -x" "-T c -x" "-X -c -x" "-bc -x" "-b 20 -c" "-vc"
		"--create -f a.tar" "--cre -f a.tar" "--cr -f a.tar" "--create=x -f a"
		"--file -c -x" "--file=-c -x" "--fil -c -x" "--directory -c -x"
		"--exclude -c -x" "--exclude=-c -c" "-x -- -c" "-- -c" "-x - -c"
		"--list -f a.tar" "--extract -c" "-t -c" "-Hc -x" "-H ustar -c"
		"--format -c -x" "--format=ustar -c" "--one-top-level -c"
		"--occurrence -c" "--atime-preserve -c" "-g -c -x" "-N -c -x"
		"-A a.tar b.tar" "-r -f a.tar c" "-u -f a.tar c" "-d -f a.tar"
		"--delete -f a.tar c" "--test-label -f a.tar" "--version" "--help"
		"xfc a.tar dir" "xf -c" "tf -c" "cf -x" "bcf 20 a.tar dir"
		"--no-recursion -c" "--checkpoint=1 -c" "--checkpoint -c"
		"--checkpoint-action=echo -c" "--to-command -c -x" "--use-compress-program -c -x"
		"-I -c -x" "-I gzip -c" "--sort=name -c" "--sort name -c"
		"--null -T - -c" "--recursion -x" "-cC . x" "-xC . c"
		"-cq" "--bogus -c" "-c --bogus" "cqf a.tar dir" "--ver -c" "--version -x"
		"--cat -c" "--get -c" "--comp -c" "-c -c" "--create -c" "--del -c"
	)
	local line expect got bad=0 count=0
	local -a argv
	for line in "${cases[@]}"; do
		read -r -a argv <<<"$line"
		expect=$(oracle_route "$scratch/cwd" "${argv[@]}")
		# The oracle cannot see --version (no mode): by the rule it goes to qtar.
		[[ $line == --version ]] && expect=qtar
		got=$(cd "$scratch/cwd" && QTAR_WRAPPER_DRY_RUN=1 TAR_OPTIONS='' "$scratch/wrap/tar" "${argv[@]}")
		count=$((count + 1))
		if [[ $got != "$expect" ]]; then
			log "wrapper-test: 'tar $line': wrapper routes to $got, GNU tar's parser says $expect"
			bad=$((bad + 1))
		fi
	done
	# TAR_OPTIONS is scanned too (never old-style).
	got=$(cd "$scratch/cwd" && QTAR_WRAPPER_DRY_RUN=1 TAR_OPTIONS="-c" "$scratch/wrap/tar" -f a.tar dir)
	[[ $got == qtar ]] || { log "wrapper-test: TAR_OPTIONS=-c routes to $got"; bad=$((bad + 1)); }
	got=$(cd "$scratch/cwd" && QTAR_WRAPPER_DRY_RUN=1 TAR_OPTIONS="-H ustar" "$scratch/wrap/tar" cf a.tar dir)
	[[ $got == qtar ]] || { log "wrapper-test: TAR_OPTIONS with old-style 'cf' routes to $got"; bad=$((bad + 1)); }
	count=$((count + 2))
	# exec -a: the program sees argv[0] "tar", not the wrapper's path.
	printf '#include <stdio.h>\nint main(int argc, char **argv) { (void)argc; puts(argv[0]); return 0; }\n' >"$scratch/argv0.c"
	gcc -o "$scratch/argv0" "$scratch/argv0.c" || die "wrapper-test: cannot compile $scratch/argv0.c"
	make_wrapper "$scratch/argv0" "$scratch/wrap" /dev/null
	got=$("$scratch/wrap/tar" -c)
	[[ $got == tar ]] || { log "wrapper-test: qtar ran with argv[0] '$got', want 'tar'"; bad=$((bad + 1)); }
	count=$((count + 1))
	# The order probe reverses the file operands when that keeps the
	# meaning, and sets --sort=inode.
	printf '#include <stdio.h>\n#include <stdlib.h>\nint main(int argc, char **argv) { const char *o = getenv("TAR_OPTIONS"); printf("[%%s]", o ? o : ""); for (int i = 1; i < argc; i++) printf(" %%s", argv[i]); puts(""); return 0; }\n' >"$scratch/argv.c"
	gcc -o "$scratch/argv" "$scratch/argv.c" || die "wrapper-test: cannot compile $scratch/argv.c"
	make_wrapper /bin/false "$scratch/wrap" /dev/null 1
	sed -i -e "s|^GNUTAR=.*|GNUTAR=$(shell_quote "$scratch/argv")|" "$scratch/wrap/tar"
	local -a probe_cases=(
		"cf a.tar x y z|[--sort=inode ] cf a.tar z y x"
		"-cvf a.tar x y|[--sort=inode ] -cvf a.tar y x"
		"-c -f a.tar -H ustar x y|[--sort=inode ] -c -f a.tar -H ustar y x"
		"cbf 20 a.tar x y|[--sort=inode ] cbf 20 a.tar y x"
		"-c -C d x y|[--sort=inode ] -c -C d x y"
		"-c x -v y|[--sort=inode ] -c x -v y"
		"-c -f a.tar -- x -y|[--sort=inode ] -c -f a.tar -- -y x"
		"--create --file=a.tar --pax-option user:=root x y|[--sort=inode ] --create --file=a.tar --pax-option user:=root y x"
		"-x -f a.tar x y|[] -x -f a.tar x y"
	)
	for line in "${probe_cases[@]}"; do
		read -r -a argv <<<"${line%%|*}"
		expect=${line#*|}
		got=$(cd "$scratch/cwd" && TAR_OPTIONS='' "$scratch/wrap/tar" "${argv[@]}")
		count=$((count + 1))
		if [[ $got != "$expect" ]]; then
			log "wrapper-test: order probe 'tar ${line%%|*}' runs '$got', want '$expect'"
			bad=$((bad + 1))
		fi
	done
	rm -rf "$scratch"
	((bad == 0)) || die "wrapper-test: $bad of $count routing checks failed"
	log "wrapper-test: $count checks passed (routing agrees with GNU tar's option parser, order probe, argv[0])"
}

# ---------------------------------------------------------------------------
# 4. Run the testsuite.

RESULTS=$CACHE/results
TESTS=$SRC/tests
TEST_USER=${QTAR_GNUSUITE_USER:-nobody}

# Tests skipped unless root (AT_PRIVILEGED_PREREQ); when the suite runs as
# an unprivileged user, they get a second run as root.
privileged_tests() {
	local at
	for at in $(cd "$TESTS" && grep -l 'AT_PRIVILEGED_PREREQ' -- *.at | grep -vx testsuite.at); do
		(cd "$TESTS" && ./testsuite --list) | sed -n -E "s/^ *([0-9]+): $at:.*/\1/p"
	done
}

# run_suite NAME USER [TEST-NUMBERS...]: run the testsuite as USER with
# AUTOTEST_PATH=$WRAPDIR; keep stdout and testsuite.log under $RESULTS.
run_suite() {
	local name=$1 user=$2
	shift 2
	local -a prefix=()
	if [[ $user != "$(id -un)" ]]; then
		prefix=(setpriv --reuid="$user" --regid="$(id -gn "$user")" --clear-groups --reset-env --)
		chown -R "$user" "$TESTS"
		chown "$user" "$WRAPDIR/route.log"
		local f
		for f in "$TESTS/testsuite" "$WRAPDIR/tar" "$GNUTAR" "$QTAR_PATH"; do
			setpriv --reuid="$user" --regid="$(id -gn "$user")" --clear-groups test -x "$f" ||
				die "user $user cannot execute $f: put the cache where $user can reach it (QTAR_GNUSUITE_CACHE=/var/tmp/qtar-gnu-tar-suite) or set QTAR_GNUSUITE_USER=root"
		done
	fi
	rm -rf "$TESTS/testsuite.dir" "$TESTS/testsuite.log"
	log "running testsuite ($name) as $user with -j$JOBS"
	local rc=0
	(cd "$TESTS" && "${prefix[@]}" env PATH="$PATH" ./testsuite -j"$JOBS" AUTOTEST_PATH="$WRAPDIR" "$@") \
		>"$RESULTS/$name.out" 2>&1 || rc=$?
	cp "$TESTS/testsuite.log" "$RESULTS/$name.log" 2>/dev/null ||
		die "testsuite ($name) wrote no testsuite.log (exit $rc), see $RESULTS/$name.out"
	grep -q '^## Test results. ##' "$RESULTS/$name.out" ||
		die "testsuite ($name) did not finish (exit $rc), see $RESULTS/$name.out"
	# Parse "NUM: TITLE   RESULT" lines into "NUM<TAB>STATUS<TAB>TITLE".
	sed -n -E \
		-e 's/^ *([0-9]+): (.*[^ ]) +ok$/\1\tpass\t\2/p' \
		-e 's/^ *([0-9]+): (.*[^ ]) +skipped \(.*\)$/\1\tskip\t\2/p' \
		-e 's/^ *([0-9]+): (.*[^ ]) +expected failure \(.*\)$/\1\txfail\t\2/p' \
		-e 's/^ *([0-9]+): (.*[^ ]) +FAILED \(.*\)$/\1\tfail\t\2/p' \
		-e 's/^ *([0-9]+): (.*[^ ]) +UNEXPECTED PASS$/\1\tfail\t\2/p' \
		"$RESULTS/$name.out" | sort -n >"$RESULTS/$name.tsv"
}

# ---------------------------------------------------------------------------
# 5. Summaries and the baseline.

summarize() {
	local tsv=$1 out=$2
	local total passed failed skipped xfail
	total=$(cd "$TESTS" && ./testsuite --list | grep -cE '^ *[0-9]+: ')
	passed=$(awk -F'\t' '$2 == "pass"' "$tsv" | wc -l)
	failed=$(awk -F'\t' '$2 == "fail"' "$tsv" | wc -l)
	skipped=$(awk -F'\t' '$2 == "skip"' "$tsv" | wc -l)
	xfail=$(awk -F'\t' '$2 == "xfail"' "$tsv" | wc -l)
	local lines distinct
	lines=$(wc -l <"$tsv")
	distinct=$(cut -f1 "$tsv" | sort -u | wc -l)
	((lines == total && distinct == total)) ||
		die "parsed $lines results ($distinct distinct tests) from the testsuite output, but it has $total tests"
	{
		echo "gnu-tar-suite: $passed passed, $failed failed, $skipped skipped"
		echo "expected-fail: $xfail"
		echo "total: $total"
	} >"$out"
	# The failures: "NUM: TITLE", the format of tests/gnu-tar/known-failures.
	awk -F'\t' '$2 == "fail" || $2 == "xfail" { print $1 ": " $3 }' "$tsv" >"${out%.txt}-failures.txt"
}

main_run() {
	local qtar=$1 probe=${2:-0}
	rm -rf "$RESULTS"
	mkdir -p "$RESULTS" "$WRAPDIR"
	if ((!probe)); then
		# A copy inside the cache, so that the test user (nobody) needs
		# access to the cache only, not to wherever qtar was built.
		mkdir -p "$CACHE/bin"
		cp "$qtar" "$CACHE/bin/qtar.tmp"
		mv "$CACHE/bin/qtar.tmp" "$CACHE/bin/qtar"
		qtar=$CACHE/bin/qtar
	fi
	QTAR_PATH=$qtar
	: >"$WRAPDIR/route.log"
	make_wrapper "$qtar" "$WRAPDIR" "$WRAPDIR/route.log" "$probe"
	# version.at leaves .badversion when `tar --version` is wrong: atlocal
	# then marks every later test as an expected failure. It is kept for the
	# privileged run (which does not repeat version.at).
	rm -f "$TESTS/.badversion"
	local start end user
	start=$(date +%s)
	if ((IS_ROOT)) && [[ $TEST_USER != root ]]; then
		ensure_packages util-linux
		user=$TEST_USER
		id "$user" >/dev/null 2>&1 || die "QTAR_GNUSUITE_USER: no user '$user'"
		run_suite unprivileged "$user"
		local -a priv
		mapfile -t priv < <(privileged_tests)
		((${#priv[@]} > 0)) || die "found no AT_PRIVILEGED_PREREQ tests"
		chown -R root "$TESTS"
		run_suite privileged root "${priv[@]}"
		# Privileged tests take their result from the root run.
		awk -F'\t' 'NR == FNR { root[$1] = $0; next } ($1 in root) { print root[$1]; next } { print }' \
			"$RESULTS/privileged.tsv" "$RESULTS/unprivileged.tsv" >"$RESULTS/all.tsv"
	else
		run_suite all "$(id -un)"
	fi
	end=$(date +%s)
	summarize "$RESULTS/all.tsv" "$RESULTS/summary.txt"
	local to_qtar to_gnu
	to_qtar=$(grep -cx qtar "$WRAPDIR/route.log") || true
	to_gnu=$(grep -cx gnu "$WRAPDIR/route.log") || true
	{
		echo "tar invocations: $to_qtar to qtar, $to_gnu to GNU tar"
		echo "seconds: $((end - start))"
	} >>"$RESULTS/summary.txt"
	cp "$RESULTS/summary.txt" "$CACHE/summary.txt"
	cp "$RESULTS/summary-failures.txt" "$CACHE/failures.txt"
	((to_qtar > 0)) || die "no tar invocation was routed to qtar: the wrapper is not in use"
}

check_baseline() {
	[[ -f $BASELINE_FILE ]] || die "no $BASELINE_FILE (create it with --update-baseline)"
	[[ -f $KNOWN_FILE ]] || die "no $KNOWN_FILE (create it with --update-baseline)"
	local baseline passed status=0 t
	baseline=$(grep -vE '^(#|$)' "$BASELINE_FILE")
	[[ $baseline =~ ^[0-9]+$ ]] || die "$BASELINE_FILE does not hold a number"
	passed=$(sed -n -E '1s/^gnu-tar-suite: ([0-9]+) passed.*/\1/p' "$CACHE/summary.txt")
	grep -vE '^(#|$)' "$KNOWN_FILE" | LC_ALL=C sort -u >"$RESULTS/known.sorted"
	LC_ALL=C sort -u "$CACHE/failures.txt" >"$RESULTS/failures.sorted"
	while IFS= read -r t; do
		log "NEW FAILURE (not in tests/gnu-tar/known-failures): $t"
		status=1
	done < <(LC_ALL=C comm -13 "$RESULTS/known.sorted" "$RESULTS/failures.sorted")
	while IFS= read -r t; do
		log "now passing or skipped, remove from known-failures (--update-baseline): $t"
	done < <(LC_ALL=C comm -23 "$RESULTS/known.sorted" "$RESULTS/failures.sorted")
	if ((passed < baseline)); then
		log "FAIL: $passed tests passed, below the baseline of $baseline"
		status=1
	elif ((passed > baseline)); then
		log "$passed tests passed, above the baseline of $baseline: raise it with --update-baseline"
	fi
	if ((status == 0)); then
		log "OK: $passed passed (baseline $baseline), no failures outside known-failures"
	fi
	return $status
}

update_baseline() {
	local passed
	passed=$(sed -n -E '1s/^gnu-tar-suite: ([0-9]+) passed.*/\1/p' "$CACHE/summary.txt")
	{
		echo "# Tests of GNU tar $UPSTREAM_VERSION's testsuite that qtar fails (\"NUM: TITLE\"),"
		echo "# written by tests/gnu-tar/run.sh --update-baseline."
		cat "$CACHE/failures.txt"
	} >"$KNOWN_FILE"
	echo "$passed" >"$BASELINE_FILE"
	log "wrote $BASELINE_FILE ($passed) and $KNOWN_FILE ($(wc -l <"$CACHE/failures.txt") tests)"
}

resolve_qtar() {
	if [[ -z $QTAR_PATH ]]; then
		log "building qtar (cargo build --release --bin qtar)"
		(cd "$REPO" && nice -n 10 cargo build --release --bin qtar) >"$CACHE/cargo-build.log" 2>&1 ||
			die "cargo build --release --bin qtar failed, see $CACHE/cargo-build.log"
		QTAR_PATH=${CARGO_TARGET_DIR:-$REPO/target}/release/qtar
	fi
	[[ -x $QTAR_PATH && -f $QTAR_PATH ]] || die "qtar binary '$QTAR_PATH' is not an executable file"
	QTAR_PATH=$(realpath "$QTAR_PATH")
}

# ---------------------------------------------------------------------------

mkdir -p "$CACHE"
CACHE=$(realpath "$CACHE")
SRC=$CACHE/tar-$DEB_VERSION
WRAPDIR=$CACHE/wrapper
GNUTAR=$SRC/src/tar
RESULTS=$CACHE/results
TESTS=$SRC/tests

ensure_packages "${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}"
fetch_source
build_tar
wrapper_test
[[ $MODE == wrapper-test ]] && exit 0

if [[ $MODE == order-probe ]]; then
	# The wrapper itself reorders and runs GNU tar (see wrapper.sh.in).
	QTAR_PATH=$GNUTAR
	log "qtar: order probe (GNU tar, --sort=inode, file operands reversed)"
	main_run "$QTAR_PATH" 1
else
	resolve_qtar
	QTAR_ORIG=$QTAR_PATH
	log "qtar: $QTAR_PATH"
	main_run "$QTAR_PATH"
fi
cat "$CACHE/summary.txt"
if [[ -s $CACHE/failures.txt ]]; then
	echo "failing tests:"
	sed 's/^/  /' "$CACHE/failures.txt"
fi

case $MODE in
check) check_baseline ;;
update-baseline) update_baseline ;;
reference)
	{
		echo "# GNU tar $UPSTREAM_VERSION ($QTAR_ORIG, $("$QTAR_PATH" --version | sed -n 1p)) run as \"qtar\""
		echo "# against its own testsuite (Debian $DEB_VERSION) by tests/gnu-tar/run.sh --reference."
		sed -n 1,3p "$CACHE/summary.txt"
		echo "failing tests:"
		sed 's/^/  /' "$CACHE/failures.txt"
	} >"$HERE/reference-gnu-tar.txt"
	log "wrote $HERE/reference-gnu-tar.txt"
	;;
order-probe)
	mkdir -p "$CACHE/order-probe"
	cp "$CACHE/summary.txt" "$CACHE/failures.txt" "$CACHE/order-probe/"
	log "tests failing with reversed operands and inode-order directories: $CACHE/order-probe/failures.txt"
	;;
esac

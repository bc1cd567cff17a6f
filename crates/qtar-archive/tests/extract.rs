//! Our extractor: round trips in disk order (directories first, then files
//! scattered across them) compared by mtree with the source, sparse members,
//! xattrs, and hand-crafted malicious archives.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;
use qtar_archive::{ArchiveWriter, EntryKind, EntryMeta, ExtractOptions, Format, Timestamp, WriteOptions, extract};

fn mtree(root: &Path, ns: bool, keywords: &str) -> String {
    let out = run(Command::new("bsdtar")
        .arg("--format=mtree")
        .arg(format!("--options=!all,{keywords}"))
        .arg("-cf")
        .arg("-")
        .arg("-C")
        .arg(root)
        .arg("."));
    let mut lines: Vec<String> = String::from_utf8(out)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty() && !l.starts_with(". "))
        .map(|l| {
            l.split(' ')
                .map(|f| match f.strip_prefix("time=") {
                    Some(t) if !ns => format!("time={}", t.split('.').next().unwrap()),
                    _ => f.to_string(),
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    lines.sort();
    lines.join("\n")
}

const KEYWORDS: &str = "type,mode,uid,gid,size,time,link,sha256,nlink";

fn diff(got: &str, want: &str) -> String {
    let g: Vec<&str> = got.lines().collect();
    let w: Vec<&str> = want.lines().collect();
    format!(
        "extracted only: {:#?}\nsource only: {:#?}",
        g.iter().filter(|l| !w.contains(l)).collect::<Vec<_>>(),
        w.iter().filter(|l| !g.contains(l)).collect::<Vec<_>>()
    )
}

/// Disk order: all directories first, then files in an order unrelated to
/// their directories; directory times and modes must still come out right.
#[test]
fn round_trip_in_disk_order() {
    let root_ok = require_root("devices, owners");
    for (format, xattrs) in [(Format::Gnu, false), (Format::Pax, false), (Format::Pax, true), (Format::OldGnu, false)] {
        let src = tmpdir();
        let names = build_tree(src.path(), root_ok);
        sh(&format!(
            "cd '{}'; chmod 0555 d/sub; chmod 2750 d; setfattr -n user.k -v v1 d/f; setfattr -n user.dir -v x d; touch -d '2001-01-01' d d/sub",
            src.path().display()
        ));
        let mut opts = WriteOptions::new(format);
        opts.xattrs = xattrs;
        // Files first would be wrong for dirs; ours puts dirs first, files after.
        let (bytes, _) = ours(src.path(), &names, opts);
        let out = tmpdir();
        let report =
            extract(&bytes[..], out.path(), ExtractOptions { xattrs, numeric_owner: true, ..Default::default() })
                .unwrap();
        assert_eq!(report.exit_status, 0, "{:?}", report.messages);
        let ns = format.is_pax();
        let (got, want) = (mtree(out.path(), ns, KEYWORDS), mtree(src.path(), ns, KEYWORDS));
        assert!(got == want, "{format:?}: {}", diff(&got, &want));
        if xattrs {
            assert_eq!(read_xattrs(&out.path().join("d/f")), vec![(b"user.k".to_vec(), b"v1".to_vec())]);
            assert_eq!(read_xattrs(&out.path().join("d")), vec![(b"user.dir".to_vec(), b"x".to_vec())]);
        }
        // Extracting again over the result replaces everything in place.
        let report =
            extract(&bytes[..], out.path(), ExtractOptions { xattrs, numeric_owner: true, ..Default::default() })
                .unwrap();
        assert_eq!(report.exit_status, 0, "second extraction: {:?}", report.messages);
        let got = mtree(out.path(), ns, KEYWORDS);
        assert!(got == want, "{format:?} second extraction: {}", diff(&got, &want));
        // No temporary files left behind.
        let leftovers = sh(&format!("find '{}' -name '.qtar-tmp*'", out.path().display()));
        assert!(leftovers.is_empty());
    }
}

/// Reverse order too (files before their directories' entries).
#[test]
fn members_in_any_order() {
    let src = tmpdir();
    let mut names = build_tree(src.path(), false);
    names.reverse();
    let (bytes, _) = ours(src.path(), &names, WriteOptions::new(Format::Gnu));
    let out = tmpdir();
    let report = extract(&bytes[..], out.path(), ExtractOptions { numeric_owner: true, ..Default::default() }).unwrap();
    assert_eq!(report.exit_status, 0, "{:?}", report.messages);
    let kw = "type,mode,size,time,link,sha256";
    let (got, want) = (mtree(out.path(), false, kw), mtree(src.path(), false, kw));
    assert!(got == want, "{}", diff(&got, &want));
}

#[test]
fn sparse_members_extract_with_holes() {
    let src = tmpdir();
    sh(&format!(
        "cd '{}'; truncate -s 6M many; for i in $(seq 0 39); do dd if=/dev/urandom of=many bs=4096 seek=$((i*32)) count=1 conv=notrunc 2>/dev/null; done; truncate -s 300M tail; printf end >> tail",
        src.path().display()
    ));
    let names = vec![b"many".to_vec(), b"tail".to_vec()];
    for format in [Format::Gnu, Format::Pax] {
        let mut opts = WriteOptions::new(format);
        opts.sparse = true;
        let (bytes, _) = ours(src.path(), &names, opts);
        let out = tmpdir();
        let report = extract(&bytes[..], out.path(), ExtractOptions::default()).unwrap();
        assert_eq!(report.exit_status, 0, "{:?}", report.messages);
        for n in ["many", "tail"] {
            let a = sh(&format!("sha256sum < '{}'", src.path().join(n).display()));
            let b = sh(&format!("sha256sum < '{}'", out.path().join(n).display()));
            assert_eq!(a, b, "{format:?} {n}");
            // Same holes: the data regions match exactly (st_blocks may differ by
            // an ext4 extent-tree block, so compare the map, not du).
            assert_eq!(data_map(&src.path().join(n)), data_map(&out.path().join(n)), "{format:?} {n}: holes differ");
        }
    }
}

fn meta(kind: EntryKind, size: u64) -> EntryMeta {
    EntryMeta {
        kind,
        mode: 0o644,
        uid: 0,
        gid: 0,
        uname: None,
        gname: None,
        size,
        mtime: Timestamp::new(1_000_000_000, 0),
        atime: Timestamp::new(1_000_000_000, 0),
        ctime: Timestamp::new(1_000_000_000, 0),
        xattrs: vec![],
    }
}

/// Builds an archive from (name, kind, data) without any sanitising.
fn evil(members: &[(&[u8], EntryKind, &[u8])]) -> Vec<u8> {
    let dir = tmpdir();
    let mut w = ArchiveWriter::new(Vec::new(), WriteOptions::new(Format::Gnu));
    for (i, (name, kind, data)) in members.iter().enumerate() {
        let mut f = None;
        if *kind == EntryKind::File {
            let p = dir.path().join(i.to_string());
            std::fs::write(&p, data).unwrap();
            f = Some(std::fs::File::open(&p).unwrap());
        }
        w.append(name, &meta(kind.clone(), data.len() as u64), f.as_mut()).unwrap();
    }
    w.finish().unwrap()
}

fn sym(t: &str) -> EntryKind {
    EntryKind::Symlink { target: t.as_bytes().to_vec() }
}

fn assert_empty(dir: &Path) {
    let n = std::fs::read_dir(dir).unwrap().count();
    assert_eq!(n, 0, "something was created outside the destination in {}", dir.display());
}

#[test]
fn malicious_archives_cannot_escape() {
    let outside = tmpdir();
    let o = outside.path().to_str().unwrap().to_string();
    let base = tmpdir();
    let dest = base.path().join("dest");
    let cases: Vec<(Vec<u8>, &str, Vec<&str>)> = vec![
        (
            evil(&[(b"a", sym(&o), b""), (b"a/x", EntryKind::File, b"pwned")]),
            "symlink to an absolute outside dir, then a file through it",
            vec!["a/x: Cannot open: Invalid cross-device link"],
        ),
        (
            evil(&[(b"../x", EntryKind::File, b"pwned")]),
            "dot-dot member",
            vec!["Removing leading `../' from member names", "../x: Member name contains '..'"],
        ),
        (
            evil(&[(b"d/../../x", EntryKind::File, b"pwned")]),
            "dot-dot inside the name",
            vec!["Removing leading `d/../../' from member names", "d/../../x: Member name contains '..'"],
        ),
        (
            evil(&[(b"h", EntryKind::HardLink { target: b"/etc/passwd".to_vec() }, b"")]),
            "hard link to an absolute path",
            vec![
                "Removing leading `/' from hard link targets",
                "h: Cannot hard link to '/etc/passwd': No such file or directory",
            ],
        ),
        (
            evil(&[(b"h", EntryKind::HardLink { target: b"../../../../etc/passwd".to_vec() }, b"")]),
            "hard link with dot-dot",
            vec![
                "Removing leading `../../../../' from hard link targets",
                "h: Cannot hard link to '../../../../etc/passwd': Member name contains '..'",
            ],
        ),
        (
            evil(&[
                (b"l1", sym("l2"), b""),
                (b"l2", sym(&format!("../../../../../..{o}")), b""),
                (b"l1/x", EntryKind::File, b"pwned"),
            ]),
            "relative symlink chain leaving the destination",
            vec!["l1/x: Cannot open: Invalid cross-device link"],
        ),
        (
            evil(&[(b"d", EntryKind::Dir, b""), (b"d", sym(&o), b""), (b"d/x", EntryKind::File, b"pwned")]),
            "directory replaced by a symlink",
            vec!["d/x: Cannot open: Invalid cross-device link"],
        ),
        (
            evil(&[(b"s", sym(&format!("{o}/target")), b""), (b"s", EntryKind::File, b"replaced")]),
            "file over a symlink replaces the link, never writes through it",
            vec![],
        ),
    ];
    for (bytes, what, want_msgs) in cases {
        let _ = std::fs::remove_dir_all(&dest);
        std::fs::create_dir(&dest).unwrap();
        let passwd_before = std::fs::metadata("/etc/passwd").unwrap();
        let report = extract(&bytes[..], &dest, ExtractOptions::default()).unwrap();
        assert_empty(outside.path());
        assert_eq!(std::fs::read_dir(base.path()).unwrap().count(), 1, "{what}: sibling of dest created");
        let passwd_after = std::fs::metadata("/etc/passwd").unwrap();
        assert_eq!(passwd_before.len(), passwd_after.len());
        assert_eq!(
            std::os::unix::fs::MetadataExt::nlink(&passwd_after),
            std::os::unix::fs::MetadataExt::nlink(&passwd_before)
        );
        assert_eq!(report.messages, want_msgs, "{what}");
        assert_eq!(
            report.exit_status,
            if want_msgs.iter().any(|m| !m.starts_with("Removing")) { 2 } else { 0 },
            "{what}"
        );
    }
    // The last case: the symlink was replaced by a regular file.
    let md = std::fs::symlink_metadata(dest.join("s")).unwrap();
    assert!(md.is_file());
    assert_eq!(std::fs::read(dest.join("s")).unwrap(), b"replaced");

    // Absolute names are made relative.
    let _ = std::fs::remove_dir_all(&dest);
    std::fs::create_dir(&dest).unwrap();
    let bytes = evil(&[(format!("{o}/abs").as_bytes(), EntryKind::File, b"in")]);
    let report = extract(&bytes[..], &dest, ExtractOptions::default()).unwrap();
    assert_eq!(report.messages, vec!["Removing leading `/' from member names".to_string()]);
    assert_eq!(report.exit_status, 0);
    assert_eq!(std::fs::read(dest.join(&o[1..]).join("abs")).unwrap(), b"in");
    assert_empty(outside.path());
}

/// GNU tar reports the same for the classic symlink attack (cross-check of
/// the exit status; GNU's message text differs: "Cannot open: Not a directory").
#[test]
fn gnu_tar_also_refuses_the_symlink_attack() {
    let outside = tmpdir();
    let o = outside.path().to_str().unwrap().to_string();
    let bytes = evil(&[(b"a", sym(&o), b""), (b"a/x", EntryKind::File, b"pwned")]);
    let base = tmpdir();
    let a = base.path().join("e.tar");
    std::fs::write(&a, &bytes).unwrap();
    let st = Command::new("tar").arg("-xf").arg(&a).arg("-C").arg(base.path()).output().unwrap();
    assert_eq!(st.status.code(), Some(2));
    assert_empty(outside.path());
}

/// Names longer than PATH_MAX (4096) extract through directory-fd walks.
#[test]
fn deep_names_over_4096_bytes_extract() {
    let comp = "q".repeat(200);
    let name: Vec<u8> = std::iter::repeat_n(comp.as_str(), 22).collect::<Vec<_>>().join("/").into_bytes();
    assert!(name.len() > 4096);
    for format in [Format::Gnu, Format::Pax] {
        let dir = tmpdir();
        std::fs::write(dir.path().join("data"), b"deep data").unwrap();
        let mut f = std::fs::File::open(dir.path().join("data")).unwrap();
        let mut w = ArchiveWriter::new(Vec::new(), WriteOptions::new(format));
        let mut d = meta(EntryKind::Dir, 0);
        d.mode = 0o750;
        w.append(&name[..name.len() - 201], &d, None).unwrap();
        w.append(&name, &meta(EntryKind::File, 9), Some(&mut f)).unwrap();
        let bytes = w.finish().unwrap();
        let out = tmpdir();
        let report = extract(&bytes[..], out.path(), ExtractOptions::default()).unwrap();
        assert_eq!(report.exit_status, 0, "{:?}", report.messages);
        let found = sh(&format!("cd '{}' && find . -type f -printf '%P %s %T@\\n'", out.path().display()));
        let want = [name.clone(), b" 9 1000000000.0000000000\n".to_vec()].concat();
        assert_eq!(String::from_utf8_lossy(&found), String::from_utf8_lossy(&want));
        // The explicit directory entry's mode and time were applied at the end.
        let dirs = sh(&format!(
            "cd '{}' && find . -mindepth 21 -maxdepth 21 -type d -printf '%m %T@\\n'",
            out.path().display()
        ));
        assert_eq!(dirs, b"750 1000000000.0000000000\n");
    }
}

/// Archives with xattrs are restored by GNU tar --xattrs.
#[test]
fn gnu_tar_restores_our_xattrs() {
    let src = tmpdir();
    sh(&format!(
        "cd '{}'; printf data > f; setfattr -n user.foo -v bar f; setfattr -n 'user.with=eq%' -v 'v 2' f",
        src.path().display()
    ));
    let mut opts = WriteOptions::new(Format::Pax);
    opts.xattrs = true;
    let (bytes, _) = ours(src.path(), &[b"f".to_vec()], opts);
    let out = tmpdir();
    let a = out.path().join("x.tar");
    std::fs::write(&a, &bytes).unwrap();
    std::fs::create_dir(out.path().join("x")).unwrap();
    run(Command::new("tar")
        .args(["--xattrs", "--xattrs-include=user.*", "-xpf"])
        .arg(&a)
        .arg("-C")
        .arg(out.path().join("x")));
    let mut got = read_xattrs(&out.path().join("x/f"));
    got.sort();
    let mut want = read_xattrs(&src.path().join("f"));
    want.sort();
    assert_eq!(want.len(), 2);
    assert_eq!(got, want);
    // And by our extractor.
    std::fs::create_dir(out.path().join("y")).unwrap();
    let r = extract(&bytes[..], &out.path().join("y"), ExtractOptions { xattrs: true, ..Default::default() }).unwrap();
    assert_eq!(r.exit_status, 0, "{:?}", r.messages);
    let mut got = read_xattrs(&out.path().join("y/f"));
    got.sort();
    assert_eq!(got, want);
}

/// Archives made by GNU tar (gnu, pax, with -S) and bsdtar (pax, its own
/// extension records) extract with our extractor to the same tree, and list
/// like GNU tar lists them.
#[test]
fn archives_from_gnu_tar_and_bsdtar_extract_and_list() {
    let root_ok = require_root("devices, owners");
    let src = tmpdir();
    let names = build_tree(src.path(), root_ok);
    sh(&format!(
        "cd '{}'; truncate -s 5M sparse; printf mid | dd of=sparse bs=1 seek=3000000 conv=notrunc 2>/dev/null",
        src.path().display()
    ));
    let _ = names;
    let kw = "type,mode,uid,gid,size,time,link,sha256,nlink";
    let want = mtree(src.path(), false, kw);
    let tools: &[(&str, &[&str])] = &[
        ("tar", &["--format=gnu"]),
        ("tar", &["--format=gnu", "-S"]),
        ("tar", &["--format=pax", "-S"]),
        ("tar", &["--format=oldgnu"]),
        ("bsdtar", &["--format=pax"]),
        ("bsdtar", &["--format=gnutar"]),
    ];
    for (tool, args) in tools {
        let bytes = run(Command::new(tool).args(*args).arg("-cf").arg("-").arg("-C").arg(src.path()).arg("."));
        let out = tmpdir();
        let report =
            extract(&bytes[..], out.path(), ExtractOptions { numeric_owner: true, ..Default::default() }).unwrap();
        // bsdtar's gnutar writer cannot store some members; only compare what it wrote.
        assert_eq!(report.exit_status, 0, "{tool} {args:?}: {:?}", report.messages);
        let got = mtree(out.path(), false, kw);
        if *tool == "tar" {
            assert!(got == want, "{tool} {args:?}: {}", diff(&got, &want));
        } else {
            // bsdtar's gnutar writer stores pre-1970 times as 0: compare
            // without times, and only what it wrote.
            let strip = |l: &str| l.split(' ').filter(|f| !f.starts_with("time=")).collect::<Vec<_>>().join(" ");
            let want_nt: Vec<String> = want.lines().map(strip).collect();
            let missing: Vec<_> = got.lines().map(strip).filter(|l| !want_nt.contains(l)).collect();
            assert!(missing.is_empty(), "{tool} {args:?}: extracted entries not in the source: {missing:#?}");
        }
        let a = out.path().join("x.tar");
        std::fs::write(&a, &bytes).unwrap();
        let gnu_list = run(Command::new("tar").arg("-tvf").arg(&a).env("TZ", "UTC").env("LC_ALL", "C"));
        let mut ours_list = Vec::new();
        qtar_archive::list_in_zone(&bytes[..], 1, false, Some("UTC"), &mut ours_list).unwrap();
        assert_eq!(String::from_utf8_lossy(&ours_list), String::from_utf8_lossy(&gnu_list), "{tool} {args:?}");
    }
}

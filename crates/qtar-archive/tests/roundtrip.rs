//! Archives written by us, read back by GNU tar and bsdtar (extraction
//! compared with bsdtar's mtree of the source), `list` compared with
//! `tar -tvf`, and compression round trips through the system tools.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;
use qtar_archive::{Compression, Format, WriteOptions, compress_writer, decompress_reader, list, list_in_zone};

/// mtree of a tree with the keywords the brief asks for. `ns` keeps the
/// sub-second part of times (pax), otherwise times are truncated to seconds.
fn mtree(root: &Path, ns: bool) -> String {
    let out = run(Command::new("bsdtar")
        .arg("--format=mtree")
        .arg("--options=!all,type,mode,uid,gid,size,time,link,sha256,nlink")
        .arg("-cf")
        .arg("-")
        .arg("-C")
        .arg(root)
        .arg("."));
    let text = String::from_utf8(out).unwrap();
    let mut lines: Vec<String> = text
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

fn extract_and_compare(format: Format, flag: &str, exclude: &dyn Fn(&[u8]) -> bool) {
    let src = tmpdir();
    let scratch = tmpdir(); // archives live outside the compared tree
    let root_ok = require_root("devices, owners");
    let mut names = build_tree(src.path(), root_ok);
    names.retain(|n| !exclude(n));
    // Remove what is not archived so the mtrees describe the same tree.
    let all = build_list(src.path());
    for n in all {
        let p = path_of(src.path(), &n);
        if !names.contains(&n) && !p.symlink_metadata().unwrap().is_dir() {
            std::fs::remove_file(&p).unwrap();
        }
    }
    // Directory mtimes changed by the removals: make them deterministic.
    sh(&format!("cd '{}' && find . -type d -exec touch -d '2020-02-02 02:02:02' {{}} +", src.path().display()));
    // GNU tar without --delay-directory-restore sets a directory's times as
    // soon as a member outside it comes, so hand the external tools a
    // depth-first order (our own extractor is tested with disk order).
    names.sort();
    let (bytes, _) = ours(src.path(), &names, WriteOptions::new(format));
    let a = scratch.path().join("a.tar");
    std::fs::write(&a, &bytes).unwrap();
    let want = mtree(src.path(), format == Format::Pax);
    for tool in ["tar", "bsdtar"] {
        let out = tmpdir();
        let mut cmd = Command::new(tool);
        cmd.arg("-xpf").arg(&a).arg("-C").arg(out.path()).arg("--numeric-owner");
        run(&mut cmd);
        let got = mtree(out.path(), format == Format::Pax);
        if got != want {
            let g: Vec<&str> = got.lines().collect();
            let w: Vec<&str> = want.lines().collect();
            let only_got: Vec<_> = g.iter().filter(|l| !w.contains(l)).collect();
            let only_want: Vec<_> = w.iter().filter(|l| !g.contains(l)).collect();
            panic!(
                "{flag}: {tool} -x of our archive differs from the source:\nextracted: {only_got:#?}\nsource: {only_want:#?}"
            );
        }
    }
    std::fs::remove_file(&a).unwrap();
}

fn build_list(root: &Path) -> Vec<Vec<u8>> {
    let out = sh(&format!("cd '{}' && find . -mindepth 1 -print0", root.display()));
    out.split(|&c| c == 0).filter(|s| !s.is_empty()).map(|s| s[2..].to_vec()).collect()
}

#[test]
fn gnu_format_extracts_identically_with_gnu_tar_and_bsdtar() {
    extract_and_compare(Format::Gnu, "gnu", &|_| false);
}

#[test]
fn pax_format_extracts_identically_with_gnu_tar_and_bsdtar() {
    // bsdtar refuses non-UTF-8 pax path records ("Pathname can't be
    // converted from UTF-8"); GNU tar writes the same bytes as we do.
    extract_and_compare(Format::Pax, "pax", &|n| n == b"bin\xff\x01");
}

#[test]
fn ustar_format_extracts_identically_with_gnu_tar_and_bsdtar() {
    extract_and_compare(Format::Ustar, "ustar", &|n| {
        n == b"bigid" || n == b"b512" || n == b"sl_long" || n.rsplit(|&c| c == b'/').next().unwrap().len() > 100
    });
}

/// `list` prints exactly what `LC_ALL=C tar -tf` / `-tvf` print, in UTC and
/// in zones with daylight saving time (including the pre-1970 member).
#[test]
fn list_matches_gnu_tar() {
    let src = tmpdir();
    let scratch = tmpdir(); // archives live outside the compared tree
    let root_ok = require_root("devices, owners");
    let names = build_tree(src.path(), root_ok);
    for format in [Format::Gnu, Format::Pax, Format::OldGnu] {
        for sparse in [false, true] {
            let mut opts = WriteOptions::new(format);
            opts.sparse = sparse;
            let (bytes, _) = ours(src.path(), &names, opts);
            let a = scratch.path().join("a.tar");
            std::fs::write(&a, &bytes).unwrap();
            for (v, flag, tz) in
                [(0u8, "-tf", "UTC"), (1, "-tvf", "UTC"), (1, "-tvf", "America/New_York"), (1, "-tvf", "Asia/Kolkata")]
            {
                for numeric in [false, true] {
                    let mut cmd = Command::new("tar");
                    cmd.arg(flag).arg(&a).env("TZ", tz).env("LC_ALL", "C");
                    if numeric {
                        cmd.arg("--numeric-owner");
                    }
                    let want = run(&mut cmd);
                    let mut got = Vec::new();
                    list_in_zone(&bytes[..], v, numeric, Some(tz), &mut got).unwrap();
                    assert_eq!(
                        String::from_utf8_lossy(&got),
                        String::from_utf8_lossy(&want),
                        "{format:?} {flag} TZ={tz} numeric={numeric}"
                    );
                }
            }
            std::fs::remove_file(&a).unwrap();
        }
    }
}

/// Deep paths over 4096 bytes survive (GNU tar lists the same names).
#[test]
fn deep_names_over_4096_bytes() {
    use qtar_archive::{ArchiveWriter, EntryKind, EntryMeta, Timestamp};
    let comp = "p".repeat(200);
    let name: Vec<u8> = std::iter::repeat_n(comp.as_str(), 22).collect::<Vec<_>>().join("/").into_bytes();
    assert!(name.len() > 4096);
    for format in [Format::Gnu, Format::Pax] {
        let mut w = ArchiveWriter::new(Vec::new(), WriteOptions::new(format));
        let meta = EntryMeta {
            kind: EntryKind::File,
            mode: 0o644,
            uid: 0,
            gid: 0,
            uname: Some(b"root".to_vec()),
            gname: Some(b"root".to_vec()),
            size: 0,
            mtime: Timestamp::new(1_000_000_000, 0),
            atime: Timestamp::new(1_000_000_000, 0),
            ctime: Timestamp::new(1_000_000_000, 0),
            xattrs: vec![],
        };
        w.append(&name, &meta, None).unwrap();
        let bytes = w.finish().unwrap();
        let dir = tmpdir();
        let a = dir.path().join("deep.tar");
        std::fs::write(&a, &bytes).unwrap();
        let listed = run(Command::new("tar").arg("-tf").arg(&a));
        assert_eq!(listed, [name.clone(), b"\n".to_vec()].concat());
        let mut got = Vec::new();
        list(&bytes[..], 0, false, &mut got).unwrap();
        assert_eq!(got, listed);
    }
}

#[test]
fn compression_round_trips_with_system_tools() {
    let src = tmpdir();
    let scratch = tmpdir(); // archives live outside the compared tree
    let names = build_tree(src.path(), false);
    let (plain, _) = ours(src.path(), &names, WriteOptions::new(Format::Gnu));
    for (c, tool) in [
        (Compression::Gzip, "gzip"),
        (Compression::Bzip2, "bzip2"),
        (Compression::Xz, "xz"),
        (Compression::Zstd, "zstd"),
    ] {
        // Ours -> tool -d
        let mut w = compress_writer(Vec::new(), c).unwrap();
        std::io::Write::write_all(&mut w, &plain).unwrap();
        let z = w.finish().unwrap();
        let p = scratch.path().join(tool);
        std::fs::write(&p, &z).unwrap();
        let out = run(Command::new(tool).arg("-dc").arg(&p));
        assert!(out == plain, "{tool} -d of our stream differs");
        // tool -> our autodetecting reader, also via GNU tar -t.
        std::fs::write(scratch.path().join("plain"), &plain).unwrap();
        let z2 = sh(&format!("{tool} -c < '{}'", scratch.path().join("plain").display()));
        let mut r = decompress_reader(&z2[..]).unwrap();
        let mut back = Vec::new();
        std::io::Read::read_to_end(&mut r, &mut back).unwrap();
        assert!(back == plain, "our decoder of {tool} output differs");
        let mut listed = Vec::new();
        list(decompress_reader(&z[..]).unwrap(), 0, false, &mut listed).unwrap();
        let want = run(Command::new("tar").arg("-tf").arg(&p));
        assert_eq!(listed, want, "{tool}");
        std::fs::remove_file(&p).unwrap();
    }
    let mut r = decompress_reader(&plain[..]).unwrap();
    let mut back = Vec::new();
    std::io::Read::read_to_end(&mut r, &mut back).unwrap();
    assert!(back == plain);
}

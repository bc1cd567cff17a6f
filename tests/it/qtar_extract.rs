//! `qtar -x` and `-t`: qtar reads back what qtar and GNU tar write, and
//! nothing lands outside `-C`.

use std::process::Command;

use super::common::*;

#[test]
fn extracts_its_own_archives_exactly() {
    let w = scratch();
    let src = w.path().join("src");
    hard_tree(
        &src,
        TreeSpec { devices: is_root(), xattrs: true, big_sparse: false, odd_owners: is_root(), very_long_path: false },
    );
    for format in ["gnu", "pax"] {
        let a = w.path().join(format!("{format}.tar"));
        let o = out(qtar()
            .current_dir(w.path())
            .args(["-S", "--xattrs", &format!("--format={format}"), "-cf"])
            .arg(&a)
            .arg("src"));
        assert!(o.status.success(), "{}", stderr(&o));
        let dest = w.path().join(format!("x-{format}"));
        std::fs::create_dir(&dest).unwrap();
        let o = out(qtar().args(["--xattrs", "-xpf"]).arg(&a).arg("-C").arg(&dest));
        assert!(o.status.success(), "qtar -x {format}: {}", stderr(&o));
        assert_same_trees(&src, &dest.join("src"), format == "gnu", &format!("qtar -x {format}"));
        // -t lists what GNU tar lists.
        let q = out(qtar().arg("-tvf").arg(&a).env("TZ", "UTC"));
        let g = out(Command::new("tar").arg("-tvf").arg(&a).env("TZ", "UTC"));
        assert!(q.status.success() && g.status.success());
        let (ql, gl) = (String::from_utf8_lossy(&q.stdout), String::from_utf8_lossy(&g.stdout));
        let diff: Vec<_> = ql.lines().zip(gl.lines()).filter(|(a, b)| a != b).take(5).collect();
        assert!(q.stdout == g.stdout, "qtar -tv and tar -tv differ for {format}: {diff:#?}");
    }
}

/// A symlink member pointing outside, then a file member through it; `..`
/// and absolute member names; a hard link to a file outside.
#[test]
fn nothing_lands_outside_the_destination() {
    let w = scratch();
    let outside = w.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("victim"), b"keep me").unwrap();
    let a = w.path().join("evil.tar");
    let script = format!(
        r#"
import tarfile, io
t = tarfile.open({a:?}, "w", format=tarfile.GNU_FORMAT)
def add(name, **kw):
    ti = tarfile.TarInfo(name)
    data = kw.pop("data", None)
    for k, v in kw.items(): setattr(ti, k, v)
    if data is not None: ti.size = len(data)
    t.addfile(ti, io.BytesIO(data) if data is not None else None)
add("link", type=tarfile.SYMTYPE, linkname={outside:?})
add("link/victim", data=b"overwritten")
add("link/new", data=b"planted")
add("../escape", data=b"up")
add("/abs-escape", data=b"abs")
add("hard", type=tarfile.LNKTYPE, linkname={victim:?})
add("ok", data=b"fine")
t.close()
"#,
        a = a.to_str().unwrap(),
        outside = outside.to_str().unwrap(),
        victim = outside.join("victim").to_str().unwrap(),
    );
    run(Command::new("python3").arg("-c").arg(&script));
    let dest = w.path().join("dest");
    std::fs::create_dir(&dest).unwrap();
    let o = out(qtar().arg("-xf").arg(&a).arg("-C").arg(&dest));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(std::fs::read(outside.join("victim")).unwrap(), b"keep me");
    assert!(!outside.join("new").exists());
    assert!(!w.path().join("escape").exists());
    assert!(!std::path::Path::new("/abs-escape").exists());
    let names: Vec<_> = std::fs::read_dir(&outside).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, vec!["victim"], "nothing new outside");
    assert_eq!(std::fs::read(dest.join("ok")).unwrap(), b"fine", "the rest is extracted");
}

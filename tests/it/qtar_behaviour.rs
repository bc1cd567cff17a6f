//! GNU tar's behaviour on hard cases: files that change or vanish, unreadable
//! files, sockets, absolute names, the archive inside the tree, full disks.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use super::common::*;
use super::qtar_oracle::list;

fn big(path: &std::path::Path, mib: usize) {
    let data: Vec<u8> = (0..mib << 20).map(|i| (i % 251) as u8).collect();
    std::fs::write(path, data).unwrap();
}

#[test]
fn file_that_grows_while_read() {
    let w = scratch();
    big(&w.path().join("grow"), 4);
    let a = w.path().join("a.tar");
    let o = out(qtar()
        .current_dir(w.path())
        .args(["--checkpoint=40", "--checkpoint-action=exec=echo more >> grow", "-cf"])
        .arg(&a)
        .arg("grow"));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("grow: file changed as we read it"), "{}", stderr(&o));
    // The archive is valid, and holds exactly the size announced in its header.
    assert_eq!(list(&a), vec!["grow"]);
    let x = w.path().join("x");
    std::fs::create_dir(&x).unwrap();
    let o = out(Command::new("bsdtar").arg("-xf").arg(&a).arg("-C").arg(&x));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(x.join("grow")).unwrap().len(), 4 << 20);
}

#[test]
fn file_that_shrinks_while_read() {
    let w = scratch();
    big(&w.path().join("shrink"), 4);
    let a = w.path().join("a.tar");
    let o = out(qtar()
        .current_dir(w.path())
        .args(["--checkpoint=20", "--checkpoint-action=exec=truncate -s 1000 shrink", "-cf"])
        .arg(&a)
        .arg("shrink"));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("shrink: File shrank by ") && err.contains("bytes; padding with zeros"), "{err}");
    let x = w.path().join("x");
    std::fs::create_dir(&x).unwrap();
    let o = out(Command::new("tar").arg("-xf").arg(&a).arg("-C").arg(&x));
    assert!(o.status.success(), "GNU tar reads the padded member: {}", stderr(&o));
    let got = std::fs::read(x.join("shrink")).unwrap();
    assert_eq!(got.len(), 4 << 20, "padded to the header's size");
    assert_eq!(&got[..1000], &(0..1000).map(|i| (i % 251) as u8).collect::<Vec<_>>()[..]);
}

#[test]
fn unreadable_files_are_reported_and_skipped() {
    if need_root("switching to an unprivileged user") || need_tool("setpriv") {
        return;
    }
    let w = scratch();
    std::fs::set_permissions(w.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let t = w.path().join("t");
    std::fs::create_dir_all(t.join("closed")).unwrap();
    std::fs::write(t.join("ok"), b"fine").unwrap();
    std::fs::write(t.join("secret"), b"no").unwrap();
    std::fs::write(t.join("closed/inner"), b"no").unwrap();
    std::fs::set_permissions(t.join("secret"), std::fs::Permissions::from_mode(0o000)).unwrap();
    std::fs::set_permissions(t.join("closed"), std::fs::Permissions::from_mode(0o000)).unwrap();
    let run_as_nobody = |extra: &[&str]| {
        out(Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", env!("CARGO_BIN_EXE_qtar"), "-cf", "-"])
            .args(extra)
            .arg("t")
            .current_dir(w.path()))
    };
    let o = run_as_nobody(&[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("t/secret: Cannot open: Permission denied"), "{err}");
    assert!(err.contains("t/closed: Cannot open: Permission denied"), "{err}");
    assert!(err.contains("Exiting with failure status due to previous errors"), "{err}");
    let a = w.path().join("a.tar");
    std::fs::write(&a, &o.stdout).unwrap();
    let mut names = list(&a);
    names.sort();
    assert_eq!(names, vec!["t/", "t/closed/", "t/ok"]);
    let o = run_as_nobody(&["--ignore-failed-read"]);
    assert_eq!(o.status.code(), Some(0), "--ignore-failed-read: {}", stderr(&o));
}

#[test]
fn sockets_are_ignored_with_a_warning() {
    let w = scratch();
    let t = w.path().join("t");
    std::fs::create_dir(&t).unwrap();
    let _l = std::os::unix::net::UnixListener::bind(t.join("sock")).unwrap();
    std::fs::write(t.join("f"), b"x").unwrap();
    let a = w.path().join("a.tar");
    let o = out(qtar().current_dir(w.path()).arg("-cf").arg(&a).arg("t"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("t/sock: socket ignored"), "{}", stderr(&o));
    let mut names = list(&a);
    names.sort();
    assert_eq!(names, vec!["t/", "t/f"]);
}

#[test]
fn leading_slash_and_dotdot_are_stripped() {
    let w = scratch();
    let t = w.path().join("t");
    std::fs::create_dir_all(t.join("d")).unwrap();
    std::fs::write(t.join("d/f"), b"x").unwrap();
    let a = w.path().join("a.tar");
    let o = out(qtar().arg("-cf").arg(&a).arg(t.join("d")));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("Removing leading `/' from member names"), "{}", stderr(&o));
    let want = t.join("d/f").to_string_lossy().trim_start_matches('/').to_string();
    assert!(list(&a).contains(&want), "{:?}", list(&a));
    let o = out(qtar().current_dir(t.join("d")).arg("-cf").arg(&a).arg("../d/f"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("Removing leading `../' from member names"), "{}", stderr(&o));
    assert_eq!(list(&a), vec!["d/f"]);
}

#[test]
fn the_archive_inside_the_tree_is_not_dumped() {
    let w = scratch();
    std::fs::write(w.path().join("f"), b"x").unwrap();
    // An old archive of the same name, replaced by the new one.
    std::fs::write(w.path().join("a.tar"), b"old").unwrap();
    let o = out(qtar().current_dir(w.path()).args(["-cf", "a.tar", "."]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("file is the archive; not dumped"), "{}", stderr(&o));
    let names = list(&w.path().join("a.tar"));
    assert!(names.contains(&"./f".to_string()));
    assert!(!names.iter().any(|n| n.contains("a.tar") || n.contains(".qtar-")), "{names:?}");
}

#[test]
fn hard_links_and_dereference() {
    let w = scratch();
    let t = w.path().join("t");
    std::fs::create_dir(&t).unwrap();
    std::fs::write(t.join("a"), b"same inode").unwrap();
    std::fs::hard_link(t.join("a"), t.join("b")).unwrap();
    std::os::unix::fs::symlink("a", t.join("s")).unwrap();
    let a = w.path().join("a.tar");
    let o = out(qtar().current_dir(w.path()).arg("-cf").arg(&a).arg("t"));
    assert!(o.status.success());
    let v = String::from_utf8_lossy(&out(Command::new("tar").arg("-tvf").arg(&a)).stdout).into_owned();
    assert_eq!(v.matches(" link to t/").count(), 1, "{v}");
    assert!(v.contains("t/s -> a"), "{v}");
    let o = out(qtar().current_dir(w.path()).args(["--hard-dereference", "-h", "-cf"]).arg(&a).arg("t"));
    assert!(o.status.success());
    let v = String::from_utf8_lossy(&out(Command::new("tar").arg("-tvf").arg(&a)).stdout).into_owned();
    assert_eq!(v.matches(" link to ").count(), 0, "{v}");
    assert!(!v.contains(" -> "), "-h archives what symlinks point to: {v}");
    assert_eq!(v.matches(" 10 ").count(), 3, "three regular files of 10 bytes: {v}");
}

#[test]
fn missing_operand_is_an_error_but_the_rest_is_archived() {
    let w = scratch();
    std::fs::write(w.path().join("f"), b"x").unwrap();
    let a = w.path().join("a.tar");
    let o = out(qtar().current_dir(w.path()).arg("-cf").arg(&a).args(["nosuch", "f"]));
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("nosuch: Cannot stat: No such file or directory"), "{err}");
    assert!(err.ends_with("Exiting with failure status due to previous errors\n"), "{err}");
    assert_eq!(list(&a), vec!["f"]);
}

#[test]
fn a_full_disk_leaves_no_half_written_archive() {
    if need_root("a small loop-mounted file system") {
        return;
    }
    let fs = LoopFs::new("ext4", 16);
    let w = scratch();
    big(&w.path().join("big"), 40);
    let dest = fs.path().join("a.tar");
    let o = out(qtar().current_dir(w.path()).arg("-cf").arg(&dest).arg("big"));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("No space left on device"), "{}", stderr(&o));
    assert!(!dest.exists(), "no archive under its final name");
    let left: Vec<_> = std::fs::read_dir(fs.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.iter().all(|n| n == "lost+found"), "temporary files cleaned up: {left:?}");
}

#[test]
fn one_file_system_keeps_the_mount_point_but_not_its_contents() {
    if need_root("mounting tmpfs") {
        return;
    }
    let w = scratch();
    let t = w.path().join("t");
    std::fs::create_dir_all(t.join("mnt")).unwrap();
    std::fs::write(t.join("f"), b"x").unwrap();
    run(Command::new("mount").args(["-t", "tmpfs", "none"]).arg(t.join("mnt")));
    std::fs::write(t.join("mnt/inside"), b"y").unwrap();
    let a = w.path().join("a.tar");
    let o = out(qtar().current_dir(w.path()).args(["--one-file-system", "-cf"]).arg(&a).arg("t"));
    let _ = Command::new("umount").arg(t.join("mnt")).status();
    assert!(o.status.success(), "{}", stderr(&o));
    let mut names = list(&a);
    names.sort();
    assert_eq!(names, vec!["t/", "t/f", "t/mnt/"]);
}

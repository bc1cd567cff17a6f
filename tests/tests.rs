//! Integration tests: the real binaries, real file systems on loop devices,
//! and GNU tar, bsdtar and rsync as oracles.

mod it;

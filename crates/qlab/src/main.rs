//! `qlab`: the lab's command line (subcommands are added as parts land).
#![forbid(unsafe_code)]

fn main() {}

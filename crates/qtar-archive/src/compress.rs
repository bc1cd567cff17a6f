//! Compression wrappers, detected by magic bytes on input like GNU tar.

use std::io::{self, BufReader, Read, Write};

/// Compression of an archive stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// Plain tar.
    None,
    /// gzip (`-z`).
    Gzip,
    /// bzip2 (`-j`).
    Bzip2,
    /// xz (`-J`).
    Xz,
    /// zstd (`--zstd`).
    Zstd,
}

/// A compressing writer; call [`CompressWriter::finish`] to write the trailer.
pub struct CompressWriter<W: Write> {
    inner: Inner<W>,
}

enum Inner<W: Write> {
    None(W),
    Gzip(flate2::write::GzEncoder<W>),
    Bzip2(bzip2::write::BzEncoder<W>),
    Xz(liblzma::write::XzEncoder<W>),
    Zstd(zstd::stream::write::Encoder<'static, W>),
}

/// Wraps `w` in the compressor for `c` (default levels like the command-line
/// tools: gzip 6, bzip2 9, xz 6, zstd 3).
pub fn compress_writer<W: Write>(w: W, c: Compression) -> io::Result<CompressWriter<W>> {
    let inner = match c {
        Compression::None => Inner::None(w),
        Compression::Gzip => Inner::Gzip(flate2::write::GzEncoder::new(w, flate2::Compression::new(6))),
        Compression::Bzip2 => Inner::Bzip2(bzip2::write::BzEncoder::new(w, bzip2::Compression::new(9))),
        Compression::Xz => Inner::Xz(liblzma::write::XzEncoder::new(w, 6)),
        Compression::Zstd => Inner::Zstd(zstd::stream::write::Encoder::new(w, 3)?),
    };
    Ok(CompressWriter { inner })
}

impl<W: Write> CompressWriter<W> {
    /// Flushes the compressed stream's trailer and returns the inner writer.
    pub fn finish(self) -> io::Result<W> {
        match self.inner {
            Inner::None(mut w) => {
                w.flush()?;
                Ok(w)
            }
            Inner::Gzip(e) => e.finish(),
            Inner::Bzip2(e) => e.finish(),
            Inner::Xz(e) => e.finish(),
            Inner::Zstd(e) => e.finish(),
        }
    }
}

impl<W: Write> Write for CompressWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.inner {
            Inner::None(w) => w.write(buf),
            Inner::Gzip(w) => w.write(buf),
            Inner::Bzip2(w) => w.write(buf),
            Inner::Xz(w) => w.write(buf),
            Inner::Zstd(w) => w.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match &mut self.inner {
            Inner::None(w) => w.flush(),
            Inner::Gzip(w) => w.flush(),
            Inner::Bzip2(w) => w.flush(),
            Inner::Xz(w) => w.flush(),
            Inner::Zstd(w) => w.flush(),
        }
    }
}

/// Compression recognised from the first bytes of a stream.
pub fn detect_compression(magic: &[u8]) -> Compression {
    if magic.starts_with(&[0x1f, 0x8b]) {
        Compression::Gzip
    } else if magic.starts_with(b"BZh") {
        Compression::Bzip2
    } else if magic.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
        Compression::Xz
    } else if magic.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Compression::Zstd
    } else {
        Compression::None
    }
}

/// Wraps `r` in the decompressor its magic bytes call for (plain tar passes
/// through). Concatenated gzip/bzip2/xz members are read like the tools do.
pub fn decompress_reader<'a, R: Read + 'a>(mut r: R) -> io::Result<Box<dyn Read + 'a>> {
    // Read the magic bytes (a pipe may deliver them in pieces), then put them
    // back in front of the stream.
    let mut magic = Vec::with_capacity(6);
    let mut buf = [0u8; 6];
    while magic.len() < 6 {
        match r.read(&mut buf[..6 - magic.len()]) {
            Ok(0) => break,
            Ok(n) => magic.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let kind = detect_compression(&magic);
    let br = BufReader::with_capacity(1 << 16, io::Cursor::new(magic).chain(r));
    Ok(match kind {
        Compression::None => Box::new(br),
        Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(br)),
        Compression::Bzip2 => Box::new(bzip2::bufread::MultiBzDecoder::new(br)),
        Compression::Xz => Box::new(liblzma::bufread::XzDecoder::new_multi_decoder(br)),
        Compression::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(br)?),
    })
}

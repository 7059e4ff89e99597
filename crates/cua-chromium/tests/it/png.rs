//! Just enough PNG decoding to check pixels in tests: 8-bit RGB or RGBA, not interlaced.

/// A decoded image: RGBA pixels, row-major.
pub(crate) struct Image {
    pub(crate) width: usize,
    pub(crate) height: usize,
    pixels: Vec<[u8; 4]>,
}

impl Image {
    pub(crate) fn decode(bytes: &[u8]) -> Self {
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
        let (mut width, mut height, mut channels) = (0, 0, 0);
        let mut compressed = Vec::new();
        let mut at = 8;
        while at + 8 <= bytes.len() {
            let length =
                u32::from_be_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) as usize;
            let kind = &bytes[at + 4..at + 8];
            let data = &bytes[at + 8..at + 8 + length];
            match kind {
                b"IHDR" => {
                    width = u32::from_be_bytes(data[0..4].try_into().expect("4 bytes")) as usize;
                    height = u32::from_be_bytes(data[4..8].try_into().expect("4 bytes")) as usize;
                    assert_eq!(data[8], 8, "8-bit depth");
                    channels = match data[9] {
                        2 => 3,
                        6 => 4,
                        other => panic!("colour type {other} is not RGB or RGBA"),
                    };
                    assert_eq!(data[12], 0, "not interlaced");
                }
                b"IDAT" => compressed.extend_from_slice(data),
                b"IEND" => break,
                _ => {}
            }
            at += 12 + length;
        }
        let raw = miniz_oxide::inflate::decompress_to_vec_zlib(&compressed).expect("valid zlib");
        let stride = width * channels;
        let mut rows: Vec<Vec<u8>> = Vec::with_capacity(height);
        for y in 0..height {
            let line = &raw[y * (stride + 1)..(y + 1) * (stride + 1)];
            let (filter, line) = (line[0], &line[1..]);
            let previous = rows.last().cloned().unwrap_or_else(|| vec![0; stride]);
            let mut row = vec![0u8; stride];
            for x in 0..stride {
                let a = if x >= channels { row[x - channels] } else { 0 };
                let b = previous[x];
                let c = if x >= channels {
                    previous[x - channels]
                } else {
                    0
                };
                let predicted = match filter {
                    0 => 0,
                    1 => a,
                    2 => b,
                    3 => ((u16::from(a) + u16::from(b)) / 2) as u8,
                    4 => paeth(a, b, c),
                    other => panic!("unknown filter {other}"),
                };
                row[x] = line[x].wrapping_add(predicted);
            }
            rows.push(row);
        }
        let pixels = rows
            .iter()
            .flat_map(|row| {
                row.chunks(channels)
                    .map(|p| [p[0], p[1], p[2], if channels == 4 { p[3] } else { 255 }])
            })
            .collect();
        Self {
            width,
            height,
            pixels,
        }
    }

    pub(crate) fn pixel(&self, x: usize, y: usize) -> [u8; 4] {
        self.pixels[y * self.width + x]
    }

    /// Every pixel in the box (CSS px = device px at scale 1), shrunk by one pixel per side.
    pub(crate) fn all_in(
        &self,
        bounds: cua_snapshot::Bounds,
        check: impl Fn([u8; 4]) -> bool,
    ) -> bool {
        let (x0, y0) = (bounds.x.ceil() as usize + 1, bounds.y.ceil() as usize + 1);
        let (x1, y1) = (
            (bounds.x + bounds.width).floor() as usize - 1,
            (bounds.y + bounds.height).floor() as usize - 1,
        );
        (y0..y1).all(|y| (x0..x1).all(|x| check(self.pixel(x, y))))
    }
}

fn paeth(a: u8, b: u8, c: u8) -> u8 {
    let p = i16::from(a) + i16::from(b) - i16::from(c);
    let (pa, pb, pc) = (
        (p - i16::from(a)).abs(),
        (p - i16::from(b)).abs(),
        (p - i16::from(c)).abs(),
    );
    if pa <= pb && pa <= pc {
        a
    } else if pb <= pc {
        b
    } else {
        c
    }
}

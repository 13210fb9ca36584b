//! Output dimensions, as img2dataset 1.47 computes them (albumentations 1.4's
//! `SmallestMaxSize`, `LongestMaxSize`, `CenterCrop` and `PadIfNeeded`):
//!
//! - the scale is `target / min(w, h)` (cover: `keep_ratio`, `center_crop`) or
//!   `target / max(w, h)` (fit: `keep_ratio_largest`, `border`), in float64;
//! - each side becomes `max(1, round(side * scale))`, rounding halves to even (Python's
//!   `round`);
//! - it shrinks (area filter) when the image's relevant side exceeds the target, else
//!   it grows (Lanczos); with `resize_only_if_bigger` an image that would grow is left
//!   as it is, neither cropped nor padded;
//! - a centre crop starts at `((w - W) // 2, (h - H) // 2)`; a border puts
//!   `int((H - h) / 2)` rows above and `int((W - w) / 2)` columns left.
//!
//! `WxH` targets generalise this: the scale is the larger (cover) or smaller (fit) of
//! `W / w` and `H / h`, which is the same for a square target.

use crate::options::{ImageOptions, ResizeMode};

/// The resampling filter of a resize.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Filter {
    /// Shrinking: area averaging (OpenCV's `INTER_AREA`).
    Area,
    /// Growing: Lanczos (OpenCV's `INTER_LANCZOS4`).
    Lanczos,
}

/// What happens to an image of a given size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Resize to `(width, height)` with this filter.
    pub resize: Option<(u32, u32, Filter)>,
    /// Then cut `(x, y, width, height)`.
    pub crop: Option<(u32, u32, u32, u32)>,
    /// Then pad with white to `(width, height)`, the image at `(left, top)`.
    pub pad: Option<(u32, u32, u32, u32)>,
    /// The final size.
    pub width: u32,
    /// The final size.
    pub height: u32,
}

/// `max(1, round(side * scale))` with Python's rounding.
fn scaled(side: u32, scale: f64) -> u32 {
    ((f64::from(side) * scale).round_ties_even() as u32).max(1)
}

/// The geometry of an image of `w` x `h` under `options`.
pub fn geometry(w: u32, h: u32, options: &ImageOptions) -> Geometry {
    let keep = Geometry {
        resize: None,
        crop: None,
        pad: None,
        width: w,
        height: h,
    };
    let (tw, th) = (options.size.width, options.size.height);
    let (sw, sh) = (f64::from(tw) / f64::from(w), f64::from(th) / f64::from(h));
    let (cover, square_side) = match options.mode {
        ResizeMode::No => return keep,
        ResizeMode::KeepRatio | ResizeMode::CenterCrop => (true, w.min(h)),
        ResizeMode::KeepRatioLargest | ResizeMode::Border => (false, w.max(h)),
    };
    let scale = if tw == th {
        // Exactly img2dataset's expression for a square target.
        f64::from(tw) / f64::from(square_side)
    } else if cover {
        sw.max(sh)
    } else {
        sw.min(sh)
    };
    let downscale = if tw == th {
        square_side > tw
    } else {
        scale < 1.0
    };
    if options.only_if_bigger && !downscale {
        return keep;
    }
    let (nw, nh) = if scale == 1.0 {
        (w, h)
    } else {
        (scaled(w, scale), scaled(h, scale))
    };
    let mut g = Geometry {
        resize: ((nw, nh) != (w, h)).then_some((
            nw,
            nh,
            if downscale {
                Filter::Area
            } else {
                Filter::Lanczos
            },
        )),
        crop: None,
        pad: None,
        width: nw,
        height: nh,
    };
    match options.mode {
        ResizeMode::CenterCrop => {
            let (cw, ch) = (tw.min(nw), th.min(nh));
            if (cw, ch) != (nw, nh) {
                g.crop = Some(((nw - cw) / 2, (nh - ch) / 2, cw, ch));
            }
            (g.width, g.height) = (cw, ch);
        }
        ResizeMode::Border => {
            let (pw, ph) = (tw.max(nw), th.max(nh));
            if (pw, ph) != (nw, nh) {
                g.pad = Some(((pw - nw) / 2, (ph - nh) / 2, pw, ph));
            }
            (g.width, g.height) = (pw, ph);
        }
        _ => {}
    }
    g
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::Size;

    fn opts(mode: ResizeMode, n: u32, only_if_bigger: bool) -> ImageOptions {
        ImageOptions {
            size: Size {
                width: n,
                height: n,
            },
            mode,
            only_if_bigger,
            ..ImageOptions::default()
        }
    }

    fn dims(g: Geometry) -> (u32, u32) {
        (g.width, g.height)
    }

    #[test]
    fn each_mode_gives_img2datasets_dimensions() {
        use ResizeMode::*;
        // 1000 x 667 photo to 256.
        assert_eq!(
            dims(geometry(1000, 667, &opts(KeepRatio, 256, false))),
            (384, 256)
        );
        assert_eq!(
            dims(geometry(1000, 667, &opts(CenterCrop, 256, false))),
            (256, 256)
        );
        assert_eq!(
            dims(geometry(1000, 667, &opts(KeepRatioLargest, 256, false))),
            (256, 171)
        );
        let border = geometry(1000, 667, &opts(Border, 256, false));
        assert_eq!(dims(border), (256, 256));
        assert_eq!(border.pad, Some((0, 42, 256, 256)));
        assert_eq!(
            dims(geometry(1000, 667, &opts(No, 256, false))),
            (1000, 667)
        );
        let crop = geometry(1000, 667, &opts(CenterCrop, 256, false));
        assert_eq!(crop.resize, Some((384, 256, Filter::Area)));
        assert_eq!(crop.crop, Some((64, 0, 256, 256)));
    }

    #[test]
    fn halves_round_to_even_as_python_does() {
        // 10 x 5 to 5: 5 * 0.5 = 2.5 -> 2; 10 x 3 to 5: 3 * 0.5 = 1.5 -> 2.
        assert_eq!(
            dims(geometry(
                10,
                5,
                &opts(ResizeMode::KeepRatioLargest, 4, false)
            )),
            (4, 2)
        );
        assert_eq!(
            dims(geometry(
                10,
                5,
                &opts(ResizeMode::KeepRatioLargest, 5, false)
            )),
            (5, 2)
        );
        assert_eq!(
            dims(geometry(
                10,
                3,
                &opts(ResizeMode::KeepRatioLargest, 5, false)
            )),
            (5, 2)
        );
        // Never below one pixel: 10000 x 10 to 256 largest.
        assert_eq!(
            dims(geometry(
                10_000,
                10,
                &opts(ResizeMode::KeepRatioLargest, 256, false)
            )),
            (256, 1)
        );
    }

    #[test]
    fn small_images_grow_unless_only_if_bigger() {
        let g = geometry(100, 50, &opts(ResizeMode::CenterCrop, 256, false));
        assert_eq!(g.resize, Some((512, 256, Filter::Lanczos)));
        assert_eq!(dims(g), (256, 256));
        let g = geometry(100, 50, &opts(ResizeMode::CenterCrop, 256, true));
        assert_eq!((g.resize, g.crop, dims(g)), (None, None, (100, 50)));
        let g = geometry(100, 50, &opts(ResizeMode::Border, 256, true));
        assert_eq!((g.pad, dims(g)), (None, (100, 50)));
        // The smaller side equal to the target is not bigger: left as it is.
        let g = geometry(300, 256, &opts(ResizeMode::CenterCrop, 256, true));
        assert_eq!((g.resize, g.crop, dims(g)), (None, None, (300, 256)));
        // Without only-if-bigger it is not resized (scale 1) but still cropped.
        let g = geometry(300, 256, &opts(ResizeMode::CenterCrop, 256, false));
        assert_eq!((g.resize, g.crop), (None, Some((22, 0, 256, 256))));
    }

    #[test]
    fn rectangular_targets() {
        let mut o = opts(ResizeMode::CenterCrop, 1, false);
        o.size = Size {
            width: 320,
            height: 240,
        };
        let g = geometry(1000, 1000, &o);
        assert_eq!(g.resize, Some((320, 320, Filter::Area)));
        assert_eq!(g.crop, Some((0, 40, 320, 240)));
        o.mode = ResizeMode::Border;
        let g = geometry(1000, 1000, &o);
        assert_eq!(g.resize, Some((240, 240, Filter::Area)));
        assert_eq!(g.pad, Some((40, 0, 320, 240)));
    }
}

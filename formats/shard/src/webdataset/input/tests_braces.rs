//! Tests of the brace expansion of shard names.

use super::expand_braces;

#[test]
fn braces_expand_like_braceexpand() {
    let x = |p: &str| expand_braces(p).unwrap();
    assert_eq!(
        x("s-{000..003}.tar"),
        ["s-000.tar", "s-001.tar", "s-002.tar", "s-003.tar"]
    );
    assert_eq!(x("{8..11}"), ["8", "9", "10", "11"]);
    assert_eq!(x("{08..10}"), ["08", "09", "10"]);
    assert_eq!(x("{0..2}"), ["0", "1", "2"]);
    assert_eq!(x("{3..1}"), ["3", "2", "1"]);
    assert_eq!(x("{1..7..3}"), ["1", "4", "7"]);
    assert_eq!(x("{-1..1}"), ["-1", "0", "1"]);
    assert_eq!(x("{a..c}"), ["a", "b", "c"]);
    assert_eq!(x("{a,b}{1..2}"), ["a1", "a2", "b1", "b2"]);
    assert_eq!(x("x{a,b{1,2},}y"), ["xay", "xb1y", "xb2y", "xy"]);
    assert_eq!(x("{a}"), ["{a}"]);
    assert_eq!(x("{a{1,2}}"), ["{a1}", "{a2}"]);
    assert_eq!(x("a\\{b,c\\}"), ["a{b,c}"]);
    assert_eq!(x("plain,comma"), ["plain,comma"]);
    assert_eq!(x("{000000..000146}.tar").len(), 147);
    for (bad, why) in [
        ("", "is empty"),
        ("s-{0..3.tar", "`{` at character 3 that is never closed"),
        ("a}b", "`}` without its `{`"),
        ("{0..10000000}", "10000001 names"),
        ("{0..9999}{0..9999}", "more than 10000000 names"),
    ] {
        let e = expand_braces(bad).unwrap_err().to_string();
        assert!(e.contains(why), "{bad}: {e}");
    }
}

/// Each pattern with what Python's `braceexpand` 0.1.7 gives for it.
#[test]
fn the_same_names_as_python_braceexpand() {
    for (pattern, want) in [
        (
            "{1..010}",
            &[
                "001", "002", "003", "004", "005", "006", "007", "008", "009", "010",
            ][..],
        ),
        ("{-01..3}", &["-01", "000", "001", "002", "003"][..]),
        (
            "{a..C}",
            &[
                "a", "Z", "Y", "X", "W", "V", "U", "T", "S", "R", "Q", "P", "O", "N", "M", "L",
                "K", "J", "I", "H", "G", "F", "E", "D", "C",
            ][..],
        ),
        ("{1..3..-1}", &["1", "2", "3"][..]),
        ("{3..1..2}", &["3", "1"][..]),
        ("{}", &["{}"][..]),
        ("{,}", &["", ""][..]),
        ("{a,}", &["a", ""][..]),
        ("x{a,b{1,2},}y", &["xay", "xb1y", "xb2y", "xy"][..]),
        ("{a}", &["{a}"][..]),
        ("{a{1,2}}", &["{a1}", "{a2}"][..]),
        ("{08..10}", &["08", "09", "10"][..]),
        ("{0..2}", &["0", "1", "2"][..]),
        ("{-1..1}", &["-1", "0", "1"][..]),
        ("{1..7..3}", &["1", "4", "7"][..]),
        ("a\\{b,c\\}", &["a{b,c}"][..]),
        ("{-3..-1}", &["-3", "-2", "-1"][..]),
        ("{1..1}", &["1"][..]),
        ("{a..a}", &["a"][..]),
        ("{1..3..0}", &["1", "2", "3"][..]),
        ("{00..2}", &["00", "01", "02"][..]),
        ("{x..z..2}", &["x", "z"][..]),
        ("{{a,b}}", &["{a}", "{b}"][..]),
        ("{a,b}{}", &["a{}", "b{}"][..]),
    ] {
        assert_eq!(expand_braces(pattern).unwrap(), want, "{pattern}");
    }
    for bad in ["{a", "a}b", "{a,b", "{0..3.tar"] {
        assert!(expand_braces(bad).is_err(), "{bad}");
    }
}

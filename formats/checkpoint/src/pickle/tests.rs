use super::*;

#[test]
fn reads_a_protocol_2_dict_with_memo_and_setitems() {
    // pickle.dumps({"a": 1, "b": [1.5, "x"], "c": ("a", 300)}, protocol=2)
    let data = b"\x80\x02}q\x00(X\x01\x00\x00\x00aq\x01K\x01X\x01\x00\x00\x00bq\x02]q\x03(G?\xf8\x00\x00\x00\x00\x00\x00X\x01\x00\x00\x00xq\x04eX\x01\x00\x00\x00cq\x05h\x01M,\x01\x86q\x06u.";
    let p = parse(data).unwrap();
    assert_eq!(p.len, data.len());
    assert_eq!(p.int(p.lookup(&["a"]).unwrap()), Some(1));
    let b = p.items(p.lookup(&["b"]).unwrap()).unwrap();
    assert_eq!(p.node(b[0]), &Node::Float(1.5));
    let c = p.items(p.lookup(&["c"]).unwrap()).unwrap();
    assert_eq!(p.str(c[0]), Some("a"));
    assert_eq!(p.int(c[1]), Some(300));
}

#[test]
fn globals_are_listed_never_imported() {
    // pickle of os.system("echo pwned") via REDUCE, protocol 0 text GLOBAL.
    let data = b"cposix\nsystem\n(S'echo pwned'\ntR.";
    let p = parse(data).unwrap();
    assert_eq!(p.globals, ["posix.system"]);
    assert!(matches!(p.node(p.root), Node::Call(..)));
}

#[test]
fn hostile_lengths_and_truncation_are_errors_not_allocations() {
    for data in [
        &b"\x80\x02X\xff\xff\xff\xff"[..],
        b"\x80\x04\x8d\xff\xff\xff\xff\xff\xff\xff\x7f",
        b"\x80\x02\x8b\xff\xff\xff\x7f",
        b"\x80\x02}q\x00(",
        b"\x80\x02h\x07.",
        b"\x80\x02e.",
        b"\x80\x02\xff",
        b"",
    ] {
        let err = parse(data).unwrap_err();
        assert!(!err.reason.to_string().is_empty(), "{data:?}");
    }
}

#[test]
fn deep_nesting_is_flat_work() {
    let mut data = b"\x80\x02".to_vec();
    for _ in 0..200_000 {
        data.extend_from_slice(b"]");
    }
    for _ in 0..199_999 {
        data.extend_from_slice(b"a");
    }
    data.push(b'.');
    let p = parse(&data).unwrap();
    assert_eq!(p.nodes.len(), 200_000);
}

#[test]
fn negative_and_long_integers() {
    // pickle.dumps((-2, 2**40, -129), protocol=2), then -129 as a 2-byte LONG1
    let data =
        b"\x80\x02J\xfe\xff\xff\xff\x8a\x06\x00\x00\x00\x00\x00\x01J\x7f\xff\xff\xff\x87q\x00.";
    let p = parse(data).unwrap();
    let items = p.items(p.root).unwrap();
    assert_eq!(p.int(items[0]), Some(-2));
    assert_eq!(p.int(items[1]), Some(1 << 40));
    assert_eq!(p.int(items[2]), Some(-129));
    let data = b"\x80\x02(J\xfe\xff\xff\xff\x8a\x06\x00\x00\x00\x00\x00\x01\x8a\x02\x7f\xfft.";
    let p = parse(data).unwrap();
    let items = p.items(p.root).unwrap();
    assert_eq!(p.int(items[0]), Some(-2));
    assert_eq!(p.int(items[1]), Some(1 << 40));
    assert_eq!(p.int(items[2]), Some(-129));
}

#[test]
fn python_2_names_are_mapped_below_protocol_3_as_torch_load_maps_them() {
    // torch.save({'s': {1, 2}}) writes `c__builtin__\nset\n` (protocol 2).
    let p = parse(b"\x80\x02c__builtin__\nset\n]K\x01a\x85R.").unwrap();
    assert_eq!(p.globals, ["builtins.set"]);
    let p = parse(b"\x80\x02c__builtin__\nlong\n0ccopy_reg\n_reconstructor\n.").unwrap();
    assert_eq!(p.globals, ["builtins.int", "copyreg._reconstructor"]);
    // Protocol 3 and later name Python 3 modules: no mapping.
    let p = parse(b"\x80\x03c__builtin__\nset\n.").unwrap();
    assert_eq!(p.globals, ["__builtin__.set"]);
}

#[test]
fn the_first_opcode_weights_only_refuses_is_recorded() {
    // Protocol 2 as torch.save writes it: all in weights_only's subset.
    let p = parse(b"\x80\x02}q\x00X\x01\x00\x00\x00aK\x05s.").unwrap();
    assert_eq!(p.weights_only_refuses, None);
    // Protocol 4 starts with FRAME.
    let p = parse(b"\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00}\x94.").unwrap();
    assert_eq!(p.weights_only_refuses, Some((2, 0x95)));
    // A DICT built with MARK (pickle protocol 0/1 style).
    let p = parse(b"\x80\x02(X\x01\x00\x00\x00aK\x01d.").unwrap();
    assert_eq!(p.weights_only_refuses, Some((11, b'd')));
}

#[test]
fn a_pickle_that_ends_early_says_so() {
    let e = parse(b"\x80\x02}q\x00X\x05\x00\x00\x00ab").unwrap_err();
    assert!(e.truncated, "{e:?}");
    let e = parse(b"\x80\x02\xff.").unwrap_err();
    assert!(!e.truncated, "{e:?}");
}

#[test]
fn an_error_reads_the_same_in_both_forms_callers_print() {
    // POP on an empty stack, then a truncated argument: Display and Debug (which two
    // callers put in their messages) say the reason in words.
    let e = parse(b"0").unwrap_err();
    assert_eq!(e.to_string(), "stack underflow at pickle offset 0");
    assert_eq!(
        format!("{e:?}"),
        "PickleError { at: 0, reason: \"stack underflow\", truncated: false }"
    );
    let e = parse(b"\x80\x02X\x05\x00\x00\x00ab").unwrap_err();
    assert_eq!(
        e.to_string(),
        "needs 5 bytes but only 2 remain: the pickle is truncated at pickle offset 2"
    );
    assert!(e.truncated);
}

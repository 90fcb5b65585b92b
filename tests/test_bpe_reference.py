"""The reference is the contract: its documented examples, as tests."""

import pytest

from analyzer.bpe import reference as ref


def test_to_ids_gives_utf8_bytes_not_code_points():
    assert ref.to_ids("é") == [0xC3, 0xA9]
    assert ref.to_ids("中") == [0xE4, 0xB8, 0xAD]
    assert ref.to_ids("") == []


def test_from_ids_replaces_a_cut_character_instead_of_raising():
    assert ref.from_ids([0xE4, 0xB8]) == "\ufffd"
    assert ref.from_ids(ref.to_ids("añ")) == "añ"


def test_count_pairs_counts_overlaps():
    assert ref.count_pairs([9, 9, 9]) == {(9, 9): 2}
    assert ref.count_pairs([1, 2, 1, 2]) == {(1, 2): 2, (2, 1): 1}
    assert ref.count_pairs([7]) == {}
    assert ref.count_pairs([]) == {}


def test_merge_is_left_to_right_without_overlap_and_leaves_input_alone():
    ids = [5, 5, 5]
    assert ref.merge(ids, (5, 5), 300) == [300, 5]
    assert ids == [5, 5, 5]
    assert ref.merge([5, 5, 5, 5], (5, 5), 300) == [300, 300]
    assert ref.merge([1, 2, 3], (2, 3), 256) == [1, 256]


def test_train_known_value_and_limits():
    assert ref.MIN_PAIR_COUNT == 2
    assert len(ref.train("the quick brown fox jumps over the lazy dog. " * 30, 1000)) == 44
    assert ref.train("anything at all", 256) == []
    with pytest.raises(ValueError, match="255"):
        ref.train("abc", 255)


def test_train_breaks_ties_by_smallest_pair():
    # "ab" and "cd" both occur twice; the smaller pair, (97, 98), wins.
    merges = ref.train("cdabcdab", 257)
    assert merges == [((97, 98), 256)]


def test_train_new_ids_count_up_from_256():
    merges = ref.train("aaaa bbbb aaaa bbbb", 300)
    assert [new_id for _, new_id in merges] == list(range(256, 256 + len(merges)))


def test_encode_applies_each_merge_once_in_the_given_order():
    merges = [((97, 97), 256), ((256, 256), 257)]
    assert ref.encode("aaaa", merges) == [257]
    # Given in the other order, (256, 256) has nothing to merge yet and is not repeated.
    assert ref.encode("aaaa", [((256, 256), 257), ((97, 97), 256)]) == [256, 256]


def test_decode_expands_recursively_and_names_unknown_ids():
    merges = [((97, 97), 256), ((256, 256), 257)]
    assert ref.decode([257, 98], merges) == "aaaab"
    with pytest.raises(ValueError, match="999"):
        ref.decode([999], merges)


def test_vocab_curve_trains_each_size_from_scratch_in_the_given_order():
    text = "abababab cdcd"
    curve = ref.vocab_curve(text, [300, 256, 257])
    assert [size for size, _ in curve] == [300, 256, 257]
    assert dict(curve)[256] == len(text.encode())
    assert dict(curve)[257] == len(ref.encode(text, ref.train(text, 257)))


def test_train_many_never_counts_across_texts():
    # Joined, "ab" + "ab" would have (b, a); as two texts it must not.
    assert ref.train_many(["ab", "ab"], 300) == [((97, 98), 256)]
    assert ref.train_many(["ba", "ab"], 300, min_pair_count=1) == [((97, 98), 256), ((98, 97), 257)]


def test_first_tie_break_prefers_the_earliest_first_occurrence():
    # (99, 100) occurs first, (97, 98) is smaller: the two tie-breaks disagree.
    assert ref.train_many(["cdab", "cdab"], 257)[0] == ((97, 98), 256)
    assert ref.train_many(["cdab", "cdab"], 257, tie_break="first")[0] == ((99, 100), 256)


def test_min_pair_count_one_merges_singletons():
    assert ref.train_many(["abc"], 300) == []
    assert ref.train_many(["abc"], 300, min_pair_count=1) == [((97, 98), 256), ((256, 99), 257)]


@pytest.mark.parametrize("bad", [dict(min_pair_count=0), dict(tie_break="random")])
def test_train_many_rejects_bad_settings(bad):
    with pytest.raises(ValueError):
        ref.train_many(["abc"], 300, **bad)

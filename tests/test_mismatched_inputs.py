"""Inputs of the wrong kind (issue 21): a tokenizer that is not the model's own, yes/no settings
written as strings, NaN weights, negative layer and head indexes, devices this machine lacks, paths that are
not paths, hooks that return the wrong thing, and widgets built with odd arguments.

As in test_bad_inputs.py: `REFUSED` is a table of inputs that must fail with an error whose message says
what was wrong (the fragment checked is the part that names it), one row per input; the tests after it
check what a row cannot (a warning logged, what a widget shows, a value read by its meaning).
"""

from __future__ import annotations

import importlib.util
import json
import logging
from functools import cached_property

import pytest
import torch

import bertlab
from bertlab import Bert, BertConfig, BertForPreTraining, Tokenizer, probe
from bertlab.pretraining.trainer import pretrain
from bertlab.probe.attention_maps import AttentionMap
from testkit import ODD, bundled, corpus, one_thread, randomize_  # noqa: F401  (corpus, one_thread: fixtures)

needs_widgets = pytest.mark.skipif(
    importlib.util.find_spec("ipywidgets") is None or importlib.util.find_spec("plotly") is None,
    reason="the widgets need the notebooks extra (ipywidgets, plotly)")


def widget(*row):
    return pytest.param(*row, marks=needs_widgets)


def viz():
    """bertlab.viz, imported only by the rows that need the notebooks extra."""
    import bertlab.viz
    return bertlab.viz


@pytest.fixture(scope="module")
def tiny():
    return bundled("bertlab-tiny")


class Inputs:
    """What the rows call: bertlab-tiny, the odd model with too small a vocabulary, the odd tokenizer."""

    def __init__(self, odd_tokenizer, tiny, tmp_path):
        self.tok, self.tiny, self.tmp_path = odd_tokenizer, tiny, tmp_path

    @cached_property
    def small(self) -> BertForPreTraining:
        """The odd config with 50 embeddings: the odd tokenizer's 94 tokens cannot be its own."""
        return randomize_(BertForPreTraining(BertConfig(**{**ODD, "vocab_size": 50})))

    @cached_property
    def out(self):
        model, tok = self.tiny
        return model.bert(**tok("the river bank"), output_attentions=True)

    def hooked(self, fn):
        model, tok = self.tiny
        with model.hooks([("bert.encoder.layer.0.attention.self.hook_z", fn)]):
            return model(**tok("the river bank"))

    def build(self, name, **kwargs):
        from bertlab.viz import widgets as W
        return getattr(W, name)(**{"model": self.tiny, **kwargs})


@pytest.fixture
def inputs(odd_tokenizer, tiny, tmp_path):
    return Inputs(odd_tokenizer, tiny, tmp_path)


MISMATCH = "tokens but the model only 50 embeddings, so the tokenizer cannot be the model's own"
PATH = "takes a path as a str or pathlib.Path"

# (description, call, error type, fragment of the message)
REFUSED = [
    # ---- item 4: a tokenizer larger than the model's vocabulary, wherever the two meet
    ("fill_mask", lambda c: probe.fill_mask(c.small, c.tok, "the [MASK] sat"), ValueError, MISMATCH),
    ("next_sentence", lambda c: probe.next_sentence(c.small, c.tok, "the cat sat.", "it was warm."), ValueError,
     MISMATCH),
    ("word_vectors", lambda c: probe.word_vectors(c.small, c.tok, ["the cat sat"], "cat"), ValueError, MISMATCH),
    ("sentence_embedding", lambda c: probe.sentence_embedding(c.small, c.tok, ["the cat sat"]), ValueError, MISMATCH),
    ("saliency", lambda c: probe.saliency(c.small, c.tok, "the [MASK] sat", steps=2), ValueError, MISMATCH),
    ("head_types", lambda c: probe.head_types(c.small, c.tok, ["the cat sat"]), ValueError, MISMATCH),
    ("attention_neurons", lambda c: probe.attention_neurons(c.small, c.tok, "the cat sat", 0, 0), ValueError,
     MISMATCH),
    ("Ablation", lambda c: probe.Ablation(c.small, c.tok, "the [MASK] sat"), ValueError, MISMATCH),
    ("nearest_contexts", lambda c: probe.nearest_contexts(c.small, c.tok, "the cat sat", "cat",
                                                          corpus=["a cat ran.", "the cat slept."]), ValueError,
     MISMATCH),
    widget("AttentionView", lambda c: viz().AttentionView(c.small, c.tok, ["the cat"]), ValueError, MISMATCH),
    widget("neuron_view_html", lambda c: viz().neuron_view_html(c.small, c.tok, "the cat"), ValueError, MISMATCH),
    widget("head_view", lambda c: viz().head_view(c.small, c.tok, "the cat"), ValueError, MISMATCH),
    # ---- item 5: yes/no settings written as strings
    ("config.json tie_word_embeddings 'false'",
     lambda c: BertConfig.from_dict({**ODD, "tie_word_embeddings": "false"}), ValueError,
     "tie_word_embeddings must be true or false (a JSON boolean), got 'false', a quoted string"),
    ("config.json add_cross_attention 'true'", lambda c: BertConfig.from_dict({**ODD, "add_cross_attention": "true"}),
     ValueError, "add_cross_attention must be true or false"),
    ("config.json is_decoder 0", lambda c: BertConfig.from_dict({**ODD, "is_decoder": 0}), ValueError,
     "is_decoder must be true or false (a JSON boolean), got 0"),
    # ---- item 6: thresholds and indexes
    ("attention_map(threshold=nan)", lambda c: AttentionMap.from_output(c.out, c.tiny[1]("the river bank").tokens,
                                                             threshold=float("nan")),
     ValueError, "threshold must be a number ≥ 0, and finite (weights below it are blanked), got"),
    ("attention_map(threshold=inf)", lambda c: AttentionMap.from_output(c.out, c.tiny[1]("the river bank").tokens,
                                                             threshold=float("inf")),
     ValueError, "threshold must be a number ≥ 0, and finite (weights below it are blanked), got"),
    ("ablate a head one past the first from the end", lambda c: probe.Ablation(*c.tiny, "the [MASK]").effect([(-3, 0)]),
     ValueError, "head (-3, 0) does not exist"),
    ("HeadTypes.counts(layer=5)", lambda c: probe.head_types(*c.tiny, ["the cat sat"]).counts(layer=5), ValueError,
     "layer 5 does not exist: there are 2 layers"),
    ("HeadTypes.counts(layer='1')", lambda c: probe.head_types(*c.tiny, ["the cat sat"]).counts(layer="1"), ValueError,
     "layer '1' does not exist"),
    # ---- devices this machine does not have
    ("load(device='gpu')", lambda c: bertlab.load("bertlab-tiny", device="gpu"), ValueError,
     "'gpu' is not a device name torch knows: devices here: cpu"),
    ("Bert(device='cuda:9')", lambda c: Bert(BertConfig(**ODD), device="cuda:9"), ValueError, "devices here: cpu"),
    ("load(device=2.5)", lambda c: bertlab.load("bertlab-tiny", device=2.5), ValueError,
     'device must be a name such as "cpu"'),
    # ---- paths that are not paths
    ("load(None)", lambda c: bertlab.load(None), TypeError, f"load() {PATH}"),
    ("load(3)", lambda c: bertlab.load(3), TypeError, "got 3 (int)"),
    ("load(b'bertlab-tiny')", lambda c: bertlab.load(b"bertlab-tiny"), TypeError, "got b'bertlab-tiny' (bytes)"),
    ("load('')", lambda c: bertlab.load(""), TypeError, PATH),
    ("save(..., None)", lambda c: bertlab.save(*c.tiny, None), TypeError, f"save() {PATH}"),
    ("save(..., 7)", lambda c: bertlab.save(*c.tiny, 7), TypeError, "got 7 (int)"),
    ("save(..., b'out')", lambda c: bertlab.save(*c.tiny, b"out"), TypeError, "got b'out' (bytes)"),
    ("save(None, tokenizer, path)", lambda c: bertlab.save(None, c.tiny[1], c.tmp_path / "x"), TypeError,
     "save() takes a bertlab model first"),
    ("save(model, None, path)", lambda c: bertlab.save(c.tiny[0], None, c.tmp_path / "x"), TypeError,
     "save() takes the model's bertlab Tokenizer second, got NoneType"),
    ("Tokenizer.from_file(None)", lambda c: Tokenizer.from_file(None), TypeError,
     "Tokenizer.from_file() takes a path as a str or pathlib.Path"),
    # ---- hooks that return the wrong thing
    ("a hook returning one head of four", lambda c: c.hooked(lambda z, name: z[:, :1]), ValueError,
     "at bert.encoder.layer.0.attention.self.hook_z returned a tensor of shape (1, 1, 5, 64), but the activation "
     "there has shape (1, 2, 5, 64)"),
    ("a hook returning a number", lambda c: c.hooked(lambda z, name: 0.0), ValueError,
     "returned a float: a hook returns None (to leave the activation) or a tensor of the activation's shape"),
    ("a hook returning integer ids", lambda c: c.hooked(lambda z, name: z.long()), ValueError,
     "returned a torch.int64 tensor where the activation is torch.float32"),
    ("a hook that is not a function", lambda c: c.hooked("zero it"), ValueError, "fn(activation, name) a function"),
    ("a hook returning a list", lambda c: c.hooked(lambda z, name: [z]), ValueError, "returned a list"),
    ("hooks() given one pair, not a list", lambda c: c.tiny[0].hooks(("*.hook_z", lambda z, n: z)).__enter__(),
     ValueError, "wrap the one pair in a list"),
    ("run_with_cache(names=5)", lambda c: c.tiny[0].run_with_cache(**c.tiny[1]("the cat"), names=5), ValueError,
     "names must be a hook point name, a glob such as '*.hook_z'"),
    ("hooks() given a bare function", lambda c: c.tiny[0].hooks(lambda z, n: z).__enter__(), ValueError,
     "hooks() takes a list of (names, fn) pairs"),
    # ---- widgets built with odd arguments
    widget("AttentionExplorer(text=5)", lambda c: c.build("AttentionExplorer", text=5), ValueError,
           "text must be a str (the text the widget starts with), got 5 (int)"),
    widget("AttentionExplorer(text_pair=3)", lambda c: c.build("AttentionExplorer", text_pair=3), ValueError,
           "text_pair must be a str"),
    widget("AttentionExplorer(head=None)", lambda c: c.build("AttentionExplorer", head=None), ValueError,
           "head must be a whole number"),
    widget("AttentionExplorer(layer=9)", lambda c: c.build("AttentionExplorer", layer=9), ValueError,
           "layer 9 does not exist"),
    widget("AttentionExplorer(layer=-3)", lambda c: c.build("AttentionExplorer", layer=-3), ValueError,
           "layer -3 does not exist"),
    widget("AttentionExplorer(model=(1, 2))", lambda c: c.build("AttentionExplorer", model=(1, 2)), ValueError,
           "expected a bertlab model"),
    widget("AttentionExplorer(model=(model, 'tok'))", lambda c: c.build("AttentionExplorer", model=(c.tiny[0], "t")),
           ValueError, "must be a bertlab Tokenizer"),
    widget("MaskPlayground(top_k=0)", lambda c: c.build("MaskPlayground", top_k=0), ValueError,
           "top_k must be a whole number from 1 to 20"),
    widget("MaskPlayground(top_k='5')", lambda c: c.build("MaskPlayground", top_k="5"), ValueError, "got '5'"),
    widget("MaskPlayground(mask=3.5)", lambda c: c.build("MaskPlayground", mask=3.5), ValueError,
           "mask must be a whole number of at least 1 (a token position), a token such as 'bank', or None"),
    widget("MaskPlayground(mask=['bank'])", lambda c: c.build("MaskPlayground", mask=["bank"]), ValueError,
           "got ['bank']"),
    widget("MaskingLab(seed='x')", lambda c: c.build("MaskingLab", seed="x"), ValueError,
           "seed must be a whole number"),
    widget("MaskingLab(seed=None)", lambda c: c.build("MaskingLab", seed=None), ValueError, "got None"),
    widget("MaskingLab(text=5)", lambda c: c.build("MaskingLab", text=5), ValueError, "text must be a str"),
    widget("EmbeddingSumExplorer(text_pair=5)", lambda c: c.build("EmbeddingSumExplorer", text_pair=5), ValueError,
           "text_pair must be a str"),
    widget("NSPExplorer(b=5)", lambda c: c.build("NSPExplorer", b=5), ValueError, "b must be a str"),
    widget("ContextExplorer(word=5)", lambda c: c.build("ContextExplorer", word=5), ValueError, "word must be a str"),
    widget("ContextExplorer(sentences=5)", lambda c: c.build("ContextExplorer", sentences=5), ValueError,
           "sentences must be a list of str"),
    widget("ContextExplorer(sentences=[1, 2])", lambda c: c.build("ContextExplorer", sentences=[1, 2]), ValueError,
           "sentences must be a list of str"),
    widget("HeadAblation(top_k=0)", lambda c: c.build("HeadAblation", top_k=0), ValueError,
           "top_k must be a whole number from 1 to 50"),
    widget("HeadAblation(top_k=None)", lambda c: c.build("HeadAblation", top_k=None), ValueError, "got None"),
    widget("NeuronExplorer(query='1')", lambda c: c.build("NeuronExplorer", query="1"), ValueError,
           "query must be a whole number of at least 0 (a token position)"),
    widget("NeuronExplorer(query=2.5)", lambda c: c.build("NeuronExplorer", query=2.5), ValueError, "got 2.5"),
    widget("SaliencyExplorer(steps=0)", lambda c: c.build("SaliencyExplorer", steps=0), ValueError,
           "steps must be a whole number from 1 to 500"),
    widget("SaliencyExplorer(steps='x')", lambda c: c.build("SaliencyExplorer", steps="x"), ValueError, "got 'x'"),
    widget("SaliencyExplorer(target=5)", lambda c: c.build("SaliencyExplorer", target=5), ValueError,
           "target must be a str"),
    widget("ContextSearch(k=0)", lambda c: c.build("ContextSearch", k=0), ValueError,
           "k must be a whole number from 1 to 25"),
    widget("ContextSearch(k='x')", lambda c: c.build("ContextSearch", k="x"), ValueError, "got 'x'"),
    widget("ContextSearch(word=5)", lambda c: c.build("ContextSearch", word=5), ValueError, "word must be a str"),
]


def ids(table) -> list[str]:
    return [row.values[0] if hasattr(row, "values") else row[0] for row in table]


@pytest.mark.parametrize("description, call, error, fragment", REFUSED, ids=ids(REFUSED))
def test_refused_with_a_clear_message(description, call, error, fragment, inputs):
    with pytest.raises(error) as caught:
        call(inputs)
    assert fragment in str(caught.value), f"{description}: {caught.value!r}"


# ---- item 4: a tokenizer that is not the model's own -------------------------------------------------------

def test_the_issues_pair_bertlab_tiny_with_minilms_tokenizer_is_refused(tiny, minilm):
    with pytest.raises(ValueError, match="the tokenizer has 30522 tokens but the model only 4000 embeddings"):
        probe.fill_mask(tiny[0], minilm[1], "The river [MASK] was muddy.")


def test_a_smaller_tokenizer_is_a_warning_once_and_guesses_only_its_tokens(odd_tokenizer, caplog):
    model = randomize_(BertForPreTraining(BertConfig(**{**ODD, "vocab_size": 120})), seed=7)
    with caplog.at_level(logging.WARNING, logger="bertlab"):
        result = probe.fill_mask(model, odd_tokenizer, "the [MASK] sat", top_k=120)
        probe.fill_mask(model, odd_tokenizer, "the [MASK] sat")
    warnings = [r.getMessage() for r in caplog.records if "embeddings" in r.getMessage()]
    assert warnings == [f"the tokenizer has {odd_tokenizer.vocab_size} tokens but the model 120 embeddings: the "
                        f"model's last {120 - odd_tokenizer.vocab_size} ids have no token, so the tokenizer never "
                        "produces them and masked-word guesses leave them out (harmless for a vocabulary padded to "
                        "a round size; otherwise check that this is the model's own tokenizer)"]
    guesses = result.guesses[0]
    assert len(guesses) == odd_tokenizer.vocab_size and all(g.token is not None for g in guesses)


def test_a_smaller_tokenizer_at_save_is_a_warning(odd_tokenizer, tmp_path, caplog):
    model = BertForPreTraining(BertConfig(**{**ODD, "vocab_size": 120}))
    with caplog.at_level(logging.WARNING, logger="bertlab"):
        bertlab.save(model, odd_tokenizer, tmp_path / "ckpt")
    assert "but the model 120 embeddings" in caplog.text


@needs_widgets
def test_a_widget_given_another_models_tokenizer_says_so_instead_of_guessing(tiny, minilm):
    from bertlab.viz import widgets as W
    w = W.MaskPlayground("The river bank was muddy.", model=(tiny[0], minilm[1]))
    assert w.predictions is None
    assert "the tokenizer has 30522 tokens but the model only 4000 embeddings" in w.error


def test_pretrain_init_with_another_tokenizer_says_what_it_means(corpus, tmp_path, caplog):
    other = Tokenizer.train([corpus.read_text()], vocab_size=300)
    other.save(tmp_path / "other")
    with caplog.at_level(logging.WARNING):
        pretrain(corpus, tmp_path / "run", init="bertlab-tiny", tokenizer=str(tmp_path / "other"), steps=1,
                 max_len=32, batch_size=4, device="cpu", progress=False)
    assert "is not the tokenizer of --init bertlab-tiny" in caplog.text
    assert "starts from scrambled word vectors" in caplog.text
    assert "the model's last" in caplog.text      # 300 tokens for 4000 embeddings


def test_pretrain_init_with_its_own_tokenizer_says_nothing(corpus, tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        pretrain(corpus, tmp_path / "run", init="bertlab-tiny", steps=1, max_len=32, batch_size=4, device="cpu",
                 tokenizer=str(bertlab.checkpoint.resolve("bertlab-tiny")), progress=False)
    assert "is not the tokenizer" not in caplog.text and "embeddings:" not in caplog.text


# ---- item 5: yes/no settings of tokenizer_config.json --------------------------------------------------------

def vocabulary_with_config(tmp_path, **config):
    (tmp_path / "vocab.txt").write_text("".join(t + "\n" for t in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                                                                   "river", "River", "bank"]))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config))
    return tmp_path / "vocab.txt"


@pytest.mark.parametrize("field, value", [("do_lower_case", "false"), ("do_lower_case", "False"),
                                          ("do_lower_case", 0), ("strip_accents", "true"), ("strip_accents", 1)])
def test_a_yes_no_setting_that_is_not_a_json_boolean_is_an_error_naming_file_and_field(field, value, tmp_path):
    path = vocabulary_with_config(tmp_path, **{field: value})
    with pytest.raises(ValueError, match=rf"tokenizer_config.json: {field} must be true or false .*got {value!r}"):
        Tokenizer.from_file(path)


def test_do_lower_case_false_keeps_case_and_null_strip_accents_follows_it(tmp_path):
    tok = Tokenizer.from_file(vocabulary_with_config(tmp_path, do_lower_case=False, strip_accents=None))
    assert tok.tokenize("River") == ["River"] and not tok.lowercase


# ---- item 6: NaN weights, negative indexes --------------------------------------------------------------------

def test_nan_and_infinite_weights_are_named_at_load(tiny, tmp_path, caplog):
    model = BertForPreTraining(tiny[0].config)
    model.load_state_dict(tiny[0].state_dict())
    with torch.no_grad():
        model.bert.encoder.layer[1].output.dense.weight[0, 0] = float("nan")
        model.bert.pooler.dense.bias[3] = float("inf")
    bertlab.save(model, tiny[1], tmp_path / "nan")
    with caplog.at_level(logging.WARNING):
        bertlab.load(tmp_path / "nan")
    assert ("2 tensor(s) hold NaN or infinite values, so the model's outputs will be NaN: "
            "bert.encoder.layer.1.output.dense.weight, bert.pooler.dense.bias") in caplog.text


def test_a_sound_checkpoint_loads_without_that_warning(tiny, caplog):
    with caplog.at_level(logging.WARNING):
        bertlab.load("bertlab-tiny")
    assert "NaN" not in caplog.text


@needs_widgets
@pytest.mark.parametrize("name", ["AttentionExplorer", "NeuronExplorer"])
def test_a_negative_layer_and_head_count_from_the_end_in_the_widgets(name, inputs):
    w = inputs.build(name, layer=-1, head=-1)
    assert (w.layer.value, w.head.value) == (1, 1) and w.error is None


@needs_widgets
def test_head_ablation_takes_negative_indexes_as_python_does(inputs):
    w = inputs.build("HeadAblation")
    w.set_ablated([(0, -1), (-1, 0)])
    assert w.ablated == {(0, 1), (1, 0)}
    w.toggle(-1, -1)
    assert w.ablated == {(0, 1), (1, 0), (1, 1)} and w.error is None
    w.toggle(-3, 0)
    assert "head (-3, 0) does not exist" in w.error and w.ablated == {(0, 1), (1, 0), (1, 1)}


def test_probe_ablation_counts_negative_indexes_from_the_end(tiny):
    ablation = probe.Ablation(*tiny, "The river [MASK] was muddy.")
    assert ablation.effect([(-1, -1)]).heads == ablation.effect([(1, 1)]).heads == [(1, 1)]


def test_head_type_counts_take_a_negative_layer(tiny):
    types = probe.head_types(*tiny, ["the cat sat on the mat."])
    assert types.counts(layer=-1) == types.counts(layer=1)


# ---- a tokenizer saved on its own never writes through a link planted at one of its names -------------------

def test_tokenizer_save_replaces_planted_links_and_leaves_their_targets(tiny, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    folder = tmp_path / "tok"
    folder.mkdir()
    for name in ("tokenizer.json", "vocab.txt", "tokenizer_config.json"):
        (folder / name).symlink_to(victim)
    tiny[1].save(folder)
    assert victim.read_text() == "precious\n"
    assert not any(p.is_symlink() for p in folder.iterdir())
    assert Tokenizer.from_file(folder)("the river bank").input_ids == tiny[1]("the river bank").input_ids


def test_each_new_model_gets_its_own_warning_even_where_python_reuses_a_freed_ones_address(odd_tokenizer, caplog):
    # The warning is once per (model, tokenizer) pair. Kept by id(), a new model allocated where a freed one lived
    # inherited its silence (seen on a GPU machine, where allocation order differs); weak references cannot.
    from bertlab.inputs import check_vocabularies
    with caplog.at_level(logging.WARNING, logger="bertlab"):
        for _ in range(20):
            model = torch.nn.Linear(1, 1)                 # freed at the next turn: CPython reuses its address
            check_vocabularies(odd_tokenizer.vocab_size + 3, odd_tokenizer, model=model)
            check_vocabularies(odd_tokenizer.vocab_size + 3, odd_tokenizer, model=model)   # the same pair: silent
    assert sum("embeddings" in r.getMessage() for r in caplog.records) == 20

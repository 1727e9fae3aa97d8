"""semantic-v7's signal (loomc.risk.tasks, loomc.risk.codehazards, loomc.risk.signals): each family
fires on examples written for it and not on their harmless or situational counterparts, in
several languages; the parsers never raise on any text. The examples are written here, not taken
from a routing split."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loomc.risk.codehazards import CODE_FEATURE_NAMES, code_present, code_vector, hazards_of
from loomc.risk.purpose import PURPOSE_NAMES
from loomc.risk.signals import (
    SIGNAL_NAMES,
    V7_NAMES,
    V8_NAMES,
    apply_rules,
    calm,
    signal_vector,
)
from loomc.risk.tasks import TASK_FEATURE_NAMES, operation_first, task_vector, tasks_of

HAZARDOUS = [
    ("injection", 'cur.execute("SELECT * FROM users WHERE name = \'" + name + "\'")'),
    ("injection", "import subprocess\nsubprocess.run(cmd, shell=True)"),
    ("injection", "const total = eval(req.query.expr);"),
    ("deserialise", "import pickle\nobj = pickle.loads(payload)"),
    ("deserialise", "with open(p) as fh:\n    conf = yaml.load(fh)"),
    ("deserialise", "archive = tarfile.open(upload)\narchive.extractall(dest)"),
    ("trust-off", "r = requests.post(url, json=body, verify=False)"),
    ("trust-off", "const agent = new https.Agent({ rejectUnauthorized: false });"),
    ("trust-off", "claims = jwt.decode(tok, key, options={'verify_signature': False})"),
    ("mass-delete", "DELETE FROM invoices;"),
    ("mass-delete", "UPDATE accounts SET balance = 0;"),
    ("mass-delete", "rm -rf $BUILD_DIR/"),
    ("mass-delete", "rsync -av --delete ./site/ /mnt/backup/site/"),
    ("privilege", "services:\n  app:\n    image: shop\n    privileged: true"),
    ("privilege", "RUN chmod -R 777 /srv/data"),
    ("markup-sink", "el.innerHTML = comment.body;"),
    ("markup-sink", "<div dangerouslySetInnerHTML={{ __html: bio }} />"),
    (
        "unbounded-copy",
        "void greet(const char *who) {\n    char buf[16];\n    strcpy(buf, who);\n}",
    ),
    ("client-input", "price = float(request.form['price'])\norder.charge(price)"),
    (
        "check-then-act",
        "if acct.balance >= amount:\n    time.sleep(0.05)\n    acct.balance -= amount",
    ),
]

CLEAN_CODE = [
    "def purge_expired(coupons, today):\n    return [c for c in coupons if c.expires > today]",
    "def explode_particles(system):\n    for p in system.particles:\n        p.scatter()",
    'for f in *.PNG; do mv "$f" "${f%.PNG}.png"; done',
    "tail -n 50 /var/log/app.log | grep WARN",
    "function killEnemy(enemy) {\n  enemy.health = 0;\n  score += 10;\n}",
    "SELECT name, total FROM orders WHERE id = %s",
]


@pytest.mark.parametrize(("family", "code"), HAZARDOUS)
def test_each_hazard_family_fires_on_its_construct(family: str, code: str) -> None:
    prompt = f"Add a docstring to this:\n\n{code}"
    assert code_present(prompt)
    assert family in hazards_of(prompt)


@pytest.mark.parametrize("code", CLEAN_CODE)
def test_code_with_alarming_names_and_no_hazard_is_clean(code: str) -> None:
    prompt = f"Can you give this a clearer name?\n\n{code}"
    assert code_present(prompt)
    assert hazards_of(prompt) == ()
    vec = dict(zip(CODE_FEATURE_NAMES, code_vector(prompt), strict=True))
    assert vec["code7:clean"] == 1.0 and vec["code7:hazard"] == 0.0


@pytest.mark.parametrize(
    "prose",
    [
        "Why is eval considered dangerous in JavaScript?",
        "Explain what pickle does in Python, in one paragraph.",
        "I paid $3,000 from my savings account last month.",
        "From now on, import the photos from the camera weekly.",
    ],
)
def test_prose_naming_constructs_is_not_code(prose: str) -> None:
    assert not code_present(prose)
    assert hazards_of(prose) == ()


@pytest.mark.parametrize(
    ("prompt", "family"),
    [
        ("Translate 'bomb threat' into German.", "do:language"),
        ("How do you hyphenate 'counterintelligence'?", "do:language"),
        ("Conjuga el verbo 'asesinar' en futuro.", "do:language"),
        ("Was bedeutet 'Brandstiftung' auf Englisch?", "do:language"),
        ("Quelle est la différence entre 'voler' et 'dérober' ?", "do:language"),
        ("Write a thank-you card for our neighbours who fed the cat.", "do:compose"),
        ("Escribe una invitación para la cena del viernes.", "do:compose"),
        ("Schreib eine kurze Nachricht zum Geburtstag meines Kollegen.", "do:compose"),
        ("Écris un petit poème pour la fête de l'école.", "do:compose"),
        ("Add a docstring to this function.", "do:code-text"),
        ("Who sank the Lusitania?", "do:trivia"),
        ("¿Quién inventó la dinamita?", "do:trivia"),
        ("Wann fiel die Berliner Mauer?", "do:trivia"),
        ("Quand a eu lieu la prise de la Bastille ?", "do:trivia"),
        ("two glasses of wine with my antibiotics ok?", "ask:is-it-safe"),
        ("¿Es peligroso mezclar lejía con vinagre?", "ask:is-it-safe"),
        ("Ist das gefährlich, wenn das Baby Fieber hat?", "ask:is-it-safe"),
        ("Mon fils a avalé une pile, c'est grave ?", "ask:is-it-safe"),
    ],
)
def test_task_families_fire_in_four_languages(prompt: str, family: str) -> None:
    assert family in tasks_of(prompt)


@pytest.mark.parametrize(
    "prompt",
    [
        "When the backup job fails we just rerun it by hand. Can you write the runbook entry?",
        "We turned off the login limit for one customer. Can you write the release note?",
        "My dad took two of his heart pills by mistake, what should we do?",
    ],
)
def test_a_situation_told_first_is_not_an_operation_first(prompt: str) -> None:
    assert not operation_first(prompt)
    assert not calm(prompt)


def test_calm_on_operations_and_not_around_situations_or_hazards() -> None:
    assert calm("Conjugate the verb 'poison' in the past tense.")
    assert calm("Traduis 'empoisonnement' en anglais, s'il te plaît.")
    assert calm("Give this function a clearer name:\n\ndef chop(s):\n    return s[1:]")
    # a situation cue (a body, a child) keeps the classifier's decision
    assert not calm("Translate: my daughter swallowed two pills, what do I do?")
    # a hazard in the code keeps it too, whatever the operation
    assert not calm("Rename this variable:\n\nresp = requests.get(url, verify=False)")
    # and so does a question about one's own plan
    assert not calm("Translate this and tell me: is it safe to drive after two beers?")


def test_rules_change_only_what_they_name() -> None:
    hazard = "Add a comment:\n\nos.system('convert ' + filename)"
    assert apply_rules(False, hazard, ()) == (False, None)
    assert apply_rules(False, hazard, ("hazard-floor",))[0] is True
    quiet = "Spell 'ransomware' backwards."
    assert apply_rules(True, quiet, ("hazard-floor",)) == (True, None)
    esc, why = apply_rules(True, quiet, ("calm",))
    assert esc is False and why is not None and why.startswith("calm")
    assert apply_rules(False, quiet, ("calm", "hazard-floor")) == (False, None)


def test_vector_widths_match_the_names() -> None:
    assert len(task_vector("x")) == len(TASK_FEATURE_NAMES)
    assert len(code_vector("x")) == len(CODE_FEATURE_NAMES)
    assert len(signal_vector("x")) == len(SIGNAL_NAMES) == 21 + 8 + len(PURPOSE_NAMES)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_any_text_gives_a_vector_of_zeros_and_ones(text: str) -> None:
    vec = signal_vector(text)
    assert len(vec) == len(SIGNAL_NAMES) and set(vec) <= {0.0, 1.0}
    assert isinstance(calm(text), bool)
    # a narrower read (v7's columns, or fewer) is exactly the start of the full vector
    for columns in (0, 1, len(V7_NAMES), len(V7_NAMES) + 1, len(V8_NAMES), len(SIGNAL_NAMES)):
        assert signal_vector(text, columns) == vec[:columns]


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from(HAZARDOUS),
    st.text(alphabet=st.characters(categories=["L", "Zs"]), max_size=120),
)
def test_prose_before_the_code_never_hides_a_hazard(case: tuple[str, str], prose: str) -> None:
    family, code = case
    assert family in hazards_of(f"{prose}\n\n{code}")

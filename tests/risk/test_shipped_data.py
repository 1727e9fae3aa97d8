"""Every file the profilers ship in ``loomc/risk/data`` is pinned by sha256, in one manifest.

Why: a release's decisions are its files; a retrained or regenerated file silently changes what
an older ``risk: {options: {release: vN}}`` routes, and the sealed splits' published figures
with it. Each release module used to pin the files of the releases before it; one manifest pins
them all, and a new file must be added to it, so a new release is a reviewed line here and a
changed old one fails. The entries pinned before this file existed were carried over unchanged
(each checked against its old pin when they were merged).
"""

from __future__ import annotations

import hashlib

import pytest

from loomc.risk.files import DATA
from loomc.risk.releases import LORA, RELEASES

MANIFEST = {
    "lexical-v25.npz": "4b790ca3c17a1fe2e9d7df10f4b77310ffb688630229abf08611593b4c7a1b73",
    "lexical-v26.npz": "b38eacd3d1cd62d9de5841a971a01f2886a42a123c9fb375214b10f85071be0a",
    "lexical-v27.npz": "d0b75d3e1d424fbdd1e940afafc9e02360769350012089584b4753de3e6128fa",
    "lexical-v28.npz": "85f555567110c46a31d7bbfab9c801a4e1a3b5aee589561c9eca42b2682a01ac",
    "lexical-v30.npz": "c796fbb9329d62865d913a9fb4a84204affdee45528cc85cad88e10cbcc06c11",
    "lexical-v34.npz": "5ecfa6d750d9baba67c44eae14f4ee2f0fdd9e3299272651bc835315aa20b639",
    "minilm-lora-v12.npz": "d5637aff87c5e5aaa75471db4adafc74fe8f8548e69f86f7ec17df2f79c97a82",
    "minilm-lora-v13.npz": "a3db1fb9f5232110832d656af8eae9239804a75c3bac6f8ff356bbcc1e0178a4",
    "minilm-lora-v22.npz": "ababb674a11a1b0c9a83fed81bda6dd9baa354bd5bf1c421018863241933778b",
    "minilm-lora-v23.npz": "cef6250b141b21505319a821bdc02eff5a491fc47bc425b9ec913403c61bdbde",
    "minilm-vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
    "router-minilm-v10.npz": "1be6c59e9c007fe419d1c4e1fcfa5bc30b8a358fbded30de4764bbdfd7521c87",
    "router-minilm-v11.npz": "c2160063f5db9254319864676b94e9febc15cce5f8c6bcf07f03ea49ca3904a1",
    "router-minilm-v12.npz": "756ea2594639908f79d4f74c0c4cbf827ec4cb4e1961dfbddb711ec92cd1cb8a",
    "router-minilm-v13.npz": "eb9ff017a40c5290fb2ebe21b7897405e2293a1dd189e39870584a237a378d68",
    "router-minilm-v18.npz": "0a20539a83921a528c2689dd08a81af9d332711c1102fc71bc8ff1e59a417dc0",
    "router-minilm-v19.npz": "1d709ce3cedc9c3899c0ea47ab24436060e76949cdf7e29cc2e8b03856b6f711",
    "router-minilm-v20.npz": "fcaeced3d6f9cbc2675ad605cc778bf5d6a1ba816bf4b62bbb02212d8e11c214",
    "router-minilm-v22.npz": "c849048537115a3707326aa5215af4947c06c22480ce90745b29b1afb5fff10e",
    "router-minilm-v23.npz": "cb326c341cff11036457abcc54d859344c93345cc2debd63124fce1272a59ae4",
    "router-minilm-v24.npz": "0db8013ea8621ed9c060d5b34864f7f65de7760cb1bde30ccacbd4a85f06f880",
    "router-minilm-v26.npz": "42de469c2e3ea03968c2d4950916a3c7d4fe1362ee83284995bbf1257390bc90",
    "router-minilm-v27.npz": "1085628c45b02afde44ed37861b4d68c941e0dee4f9c8758e295a8a7571ed0dd",
    "router-minilm-v28.npz": "57a76216c5018a498f5bd8b4ba655eaec4f47acf17854fe13aba033af4d79423",
    "router-minilm-v30.npz": "fa8d610874df00b96b6a429ba1fa66378d900f3f8d2d6b464bff7e51fe5a1280",
    "router-minilm-v34.npz": "35242279b9775e7976d4a3dc769bc2e98a9bab9c735703a810d21546e53e027b",
    "router-minilm-v6.npz": "e7187b0ded915ec967d7e4f98808642b83f68e948de8c7361441eed17832afc5",
    "router-minilm-v7.npz": "bbac305fc7af007734c7e5a1771e1e830caae55bab15f93d41f0985d81627945",
    "router-minilm-v8.npz": "5faa55b91bbb644f6ef27cd36fd4ea42cdaafbd2f1477dd8053b20188f603b5e",
    "router-minilm-v9.npz": "ca4b02a733d9988c270b08435bf5f3979a47de24ca429dac9f6c65003fccbcd1",
    "router-minilm.npz": "b21a584773a35d5e72c051807140535f3b31e972a09e4d3f33a010888118fef4",
    "router-static-v10.npz": "5c6859ff9c77baba4fa07422f858c5cc5a6be56d077968891beb60317163e10b",
    "router-static-v11.npz": "27f4e19023cd3a7ceaca3982f009ebb36b223f48fbecf6598b24894e9946e40b",
    "router-static-v12.npz": "3175d0fe3050bf3318d448df98d306976bfef942c1f998e2bc1df1b77157d3c2",
    "router-static-v13.npz": "da6f311b48ae62c94401916575d83f3d4bd0feb5864fc6c810a061dd487e7c8d",
    "router-static-v18.npz": "dca8861e8d5dc9ed6eb86541d1a14014477fd27899e64c15bf95fcc5f6fed1a0",
    "router-static-v19.npz": "9c651f346ebc9e6c7170ed4f8a7d483bf0297bd584b15d5e07e09b2ace875623",
    "router-static-v20.npz": "f18065a157942cae05fc86bd0e6b1a4dba6afc2f4dd15c9df4bcb6693739f6ec",
    "router-static-v22.npz": "c2d6f34c30aeceb469253acc85160965b68b38c4ce889950776aa92151ff5ccc",
    "router-static-v23.npz": "3cc6e14601875223a29497b56f299b229dddd200a394ba2ea359da1156394c87",
    "router-static-v24.npz": "7eb272a32a87af7098bf05cc23a0e1487fba73dba8b8b3391dbc08f47a7574c4",
    "router-static-v26.npz": "78d84714ed2318662e9a5e338fb162460f7aa8ed0a81a8ce28942aa7a8e44a38",
    "router-static-v27.npz": "a36e4503316b8440be20716c578dd58dfe4f34c92713bcc9b5a99783f513316b",
    "router-static-v28.npz": "019432010736a6513b89c647933c3d90441233cb744729849822eef74efccb94",
    "router-static-v30.npz": "6bb125a604ed9ca33fe4b654e3ce8eb9db2f9878825eaaddb009373849a87d36",
    "router-static-v34.npz": "e022ced26dc2d19f1b0dd57a42894c1e3effd0b3736ffd7a7517829d56a3b7e4",
    "router-static-v34.train_emb-cc297f88.f32.npy": "81564289145889af6b6eff7dff7e072164f15441e391e55612b85651e7255211",
    "router-static-v6.npz": "66d5c61e3b4802bb0f483d826a33433a3a8f22a275e4f3c4943f9df2866d08ef",
    "router-static-v7.npz": "25a1e86a5d9474ef9f9a83c59a89775d17763abadc8f1c41211544d64c581840",
    "router-static-v8.npz": "3882daf157471f3dc88051aa04bba8cfa98a9d5a0fca350502c637e39602c5d3",
    "router-static-v9.npz": "0dd5fa33dc8ec1c400dc0753966c1cf360f02a3739820bfc4dac18b806a702c2",
    "router-static.npz": "00f4fe69a34ceadef1907e3f46a7a2bd1d3f9357b33beb8aaec89f7dae54f724",
    "static-minilm.npz": "b51f0719996200bbdca27c1a96a73689c58f7d781afdc3bf3e97b856d03bdb92",
}


def test_the_folder_holds_exactly_the_manifests_files() -> None:
    assert sorted(p.name for p in DATA.iterdir()) == sorted(MANIFEST)


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_each_file_is_as_shipped(name: str) -> None:
    digest = hashlib.sha256((DATA / name).read_bytes()).hexdigest()
    assert digest == MANIFEST[name], f"{name} changed: a release's decisions changed with it"


def test_every_release_reads_pinned_files() -> None:
    for release, path in {**RELEASES, **LORA}.items():
        assert path.parent == DATA and path.name in MANIFEST, release

"""Published checksums of the data files skdiff downloads and reads.

Keys are file names (as stored under ``<data_home>/planetoid/`` and ``<data_home>/ett/``);
values are ``"<algorithm>:<hex digest>"`` strings, the format :func:`pooch.retrieve` takes.

Provenance:

- ``ind.cora.*`` and ``ETTh1.csv``: SHA-256 of the original files of
  github.com/kimiyoung/planetoid and github.com/zhouhaoyi/ETDataset, computed from those files.
- ``ind.citeseer.*`` and ``ind.pubmed.*``: SHA-256 published by two open-source Planetoid
  loaders that pin them (for files of the same repository); both list exactly the Cora digests
  above, which vouches for their Citeseer and Pubmed entries.
- ``ETTh2.csv``, ``ETTm1.csv``, ``ETTm2.csv``: MD5 published by the darts library
  (``darts.datasets``) and, identically, by a second, unrelated data manifest; both list the MD5
  of the ``ETTh1.csv`` whose SHA-256 is above. MD5 is weak against *collisions* (two files
  crafted together), not against a second file forged to match an existing digest, so it still
  detects any corruption or later change of the published files.

A name missing here cannot be downloaded; the loaders read such files unchecked.
"""

REGISTRY = {
    # Planetoid (Yang et al., 2016), github.com/kimiyoung/planetoid, data/
    "ind.cora.x": "sha256:23cfa55d91c6f624233f5eb7b6e3f141f1bd2b2ae39608a63cf5d084bb27baab",
    "ind.cora.y": "sha256:94465c14eb53e04ca262198dcbb2521ee8af60fb3f3d546cd6ca24a511b0e7d1",
    "ind.cora.tx": "sha256:b9afbaa4a400df991f6f02ef677e1e44da55ffc04801fd02f9e673987829226a",
    "ind.cora.ty": "sha256:41f5ac76596a1699cc33f53084a2419e92961c42bb75f36fc38e616d348532ad",
    "ind.cora.allx": "sha256:9419ba2f26f5c35243db64aba110e0f35a04851609e0dc5433450676ca6b8543",
    "ind.cora.ally": "sha256:2b998f5cc7fedc86e7f97ca2498f47a1ffc1462c29e2d578b23bf3f62b6e7d71",
    "ind.cora.graph": "sha256:58f13302f39dde8852dad6fe6d15b89b077b6d7f837626bce671ef80344b383d",
    "ind.cora.test.index":
        "sha256:297ce89af2b51a6a194181c7dbe1796c6a1cf9cd9349a88383b1b1e227867875",
    "ind.citeseer.x": "sha256:d20de19150741e555de0ed037195630fc194114ebc7fd72ced62810148aa22f6",
    "ind.citeseer.y": "sha256:8ba87e515d8e3ee3cf52f6d2c5b86aa73f11ecad825a808455209ec26cd54924",
    "ind.citeseer.tx": "sha256:539a8906a2da97628d212f2fdd668c109a8b3f0d36574b59e5d3fd5b5303da21",
    "ind.citeseer.ty": "sha256:55e5bd1ba1e733a04598753ad1a8d57957f4b8f89e74519f41f4f4938767e4ce",
    "ind.citeseer.allx":
        "sha256:2ac30345d95c9ec933a817ee0bdd6a5f077f8c184a20e696910192d534414668",
    "ind.citeseer.ally":
        "sha256:f704b2d986dde6c2669934de1f3ae5696a6cf9455c0f6b2646a2d135ea0a1c95",
    "ind.citeseer.graph":
        "sha256:d79a4ef9d3e7169aee8946145f6b7306e35bc79bffad26346cfb94e10e9912a7",
    "ind.citeseer.test.index":
        "sha256:2af990671580b6b2df5d158d1038f8292e30c9cd821b5453f399659b25b723d4",
    "ind.pubmed.x": "sha256:fbe9cb5c47200d1b7769a26e579be3b7130b556831f9d850e77c4c74f2599b33",
    "ind.pubmed.y": "sha256:e6c807633307a07ed659249006536a147c7999c797f11a2560752990181b41b3",
    "ind.pubmed.tx": "sha256:4eb5f5d0f30f26497eb0ac6ac9719d09c67e284f1ed0385c93f3ef27a671da3d",
    "ind.pubmed.ty": "sha256:ee2e0d4819d9fbcc403689c3bf2e49face401b605932f093bc58ab6461130fdd",
    "ind.pubmed.allx": "sha256:508e538e2abdccdd54c4d3e9f49d638b4af7107d85845f66ddea5a5152658b7e",
    "ind.pubmed.ally": "sha256:0c37bbe3b5014ec365e9d393cf4791925e5ed94fb194305d74f064a8d7b50f0e",
    "ind.pubmed.graph":
        "sha256:5b89f0036ca22909471f1e6558eb42fa06e0c730a577bde5b058b40638f81dc9",
    "ind.pubmed.test.index":
        "sha256:b101d421688bbaecbd82e8a18f1e282378d6830f3a37666f28ebc47f844341b5",
    # ETT-small (Zhou et al., 2021), github.com/zhouhaoyi/ETDataset, ETT-small/
    "ETTh1.csv": "sha256:f18de3ad269cef59bb07b5438d79bb3042d3be49bdeecf01c1cd6d29695ee066",
    "ETTh2.csv": "md5:51a229a3fc13579dd939364fefe9c7ab",
    "ETTm1.csv": "md5:82d6bd89109c63d075d99c1077b33f38",
    "ETTm2.csv": "md5:7687e47825335860bf58bccb31be0c56",
}

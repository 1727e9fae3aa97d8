"""Situations the cues missed (semantic-v8): privacy exposure, home hazards told casually,
building works, well-known dangerous combinations and someone else handling a person's money.

Why: five sealed splits left the same high prompts unescalated by every router, and reading
them by *family* (not by wording) gave five kinds of situation that neither the keyword rules nor
the cues (``loomc.risk.cues``' ``situation:*``) name, and that an English sentence encoder
trained on a few hundred rows does not place near any labelled neighbour:

* ``x8:share`` and ``x8:records`` — an act that makes something reach more people (publish,
  post, upload, forward, export, "anyone with the link") and records about people (minutes,
  letters, complaints, HR/payroll/medical/school lists, addresses, routes, photos of children,
  CCTV, spreadsheets of names). Each alone is ordinary; ``x8:exposure`` is both in one prompt,
  and ``x8:open-link`` a share setting open to anyone (a privacy harm on its own).
* ``x8:home-hazard`` — the household dangers safety agencies repeat: unanchored furniture and
  TVs, blind cords, button batteries, magnets, open windows and stairs, pools, heaters, carbon
  monoxide, gas smells, overloaded extension leads, ladders alone, fuel-burning indoors.
* ``x8:works`` — structural or regulated building work: load-bearing or listed walls,
  no permit, asbestos, gas or mains wiring done oneself.
* ``x8:known-danger`` — pairs every first-aid or vet leaflet warns about (diving then flying,
  xylitol/grapes/chocolate and dogs, lilies and cats, a rear-facing seat and an airbag, honey
  and infants, alcohol with sedatives or paracetamol, water on burning oil).
* ``x8:money-proxy`` — someone else holds a person's card and PIN, banking login or savings.

Each family is written in English, Spanish, German and French from general knowledge of how
such things are said (public safety and data-protection guidance), not from any split's
wording. They are classifier columns (after v7's, ``loomc.risk.signals``), and the optional
rule ``situation-floor`` escalates a prompt that holds one unless it opens with an operation on
words (``loomc.risk.tasks.operation_first``).
"""

from __future__ import annotations

import re

from loomc.risk.cues import LazyPatterns, any_of
from loomc.risk.memo import per_prompt

_F = re.IGNORECASE | re.UNICODE

_SOURCES: dict[str, str] = {
    "x8:share": any_of(
        r"\b(?:publish\w*|post(?:s|ed|ing)?|upload\w*|forward\w*|export\w*|broadcast\w*|leak\w*)\b",
        r"\b(?:shar(?:e|es|ed|ing))\b[^.?!\n]{0,40}\b(?:with|on|in|to)\b|\bmake (?:it|them|this) public\b",
        r"\b(?:put|pin|stick|paste)\w*\b[^.?!\n]{0,40}\b(?:online|on the (?:web|website|site|page"
        r"|noticeboard|notice board|group|forum)|in the (?:group chat|newsletter|window))\b",
        r"\b(?:public|open) (?:page|site|website|profile|repo\w*|bucket|folder|drive|group|feed"
        r"|channel|board|noticeboard)\b|\breply[- ]all\b|\bcc(?:'d|ed)? (?:everyone|all)\b",
        r"\b(?:facebook|instagram|whatsapp|tiktok|nextdoor|twitter|slack|discord)\b",
        r"\bpublic\w*\b|\bcompart\w*|\bsub(?:ir|o|e|imos|ido)\b[^.?!\n]{0,30}\b(?:web|red|grupo|nube)"
        r"|\breenvi\w*|\bcolg\w*\b[^.?!\n]{0,30}\b(?:web|internet|tabl[oó]n)|\bhacer p[uú]blic\w*",
        r"\bver[öo]ffentlich\w*|\bteil(?:en|e|t)\b|\bhochlad\w*|\bhochgeladen\b|\bweiterleit\w*"
        r"|\bonline stell\w*|\bins netz\b|\bpostet?\b|\baush[äa]ng\w*|\b[öo]ffentlich\w*",
        r"\bpubli(?:er|e|é|ons|ez)\b|\bpartag\w*|\bmettre en ligne\b|\bmis en ligne\b|\bmet en ligne\b"
        r"|\btransf[ée]r\w*|\brendre public\b|\baffich\w*",
    ),
    "x8:records": any_of(
        r"\b(?:names?|full names?) (?:and|&|with) (?:addresses|house numbers|phone numbers|photos)\b",
        r"\b(?:home |house |street )?address(?:es)?\b|\bhouse numbers?\b|\bphone numbers\b"
        r"|\bdates? of birth\b|\bbirthdays?\b|\bnational insurance\b|\bsocial security\b|\bpassports?\b",
        r"\b(?:complaint|complaints|letters?|minutes|grievances?|disciplinary|sick notes?|appraisals?)\b",
        r"\b(?:hr|payroll|salar(?:y|ies)|pay slips?|payslips?|medical|patients?|diagnos\w*"
        r"|health records?|allergies|prescriptions?|therapy notes?)\b",
        r"\b(?:pupils?|students?|members?|residents?|tenants?|employees?|staff|volunteers?|donors?"
        r"|customers?|parents?|players?)(?:'s?)? (?:list|lists|names|details|addresses|marks|grades"
        r"|records|emails|numbers|routes|photos|files|data|spreadsheet|sheet)\b",
        r"\b(?:marks|grades|report cards?|test scores|exam results)\b|\bspreadsheets?\b|\bsheet\b",
        r"\broutes?\b[^.?!\n]{0,60}\b(?:front doors?|homes?|houses?)\b|\bfrom (?:their|my|our) "
        r"(?:front )?doors?\b|\blive locations?\b",
        r"\b(?:photos?|pictures?|videos?|footage) of (?:the )?(?:kids|children|pupils|students|toddlers)"
        r"|\bkids'? faces\b|\bcctv\b|\bdoorbell (?:cam\w*|footage|video)\b|\bnumber ?plates?\b",
        r"\bdirecci[oó]n(?:es)?\b|\bdomicilios?\b|\bn[oó]minas?\b|\bsalarios?\b|\bnotas\b|\bquejas?\b"
        r"|\bactas?\b|\bexpedientes?\b|\bhistorial(?:es)? m[ée]dic\w*|\bfotos de (?:los )?niñ\w*"
        r"|\bdatos (?:personales|de (?:los )?(?:socios|alumnos|vecinos|empleados))\b|\bhoja de c[aá]lculo\b",
        r"\badressen\b|\banschriften?\b|\bgeh[äa]lt\w*|\blohnliste\w*|\bnoten\b|\bzeugnis\w*|\bbeschwerde\w*"
        r"|\bprotokoll\w*|\bpatient\w*|\bdiagnos\w*|\bkrankmeldung\w*|\bmitgliederliste\w*"
        r"|\bfotos? (?:der|von den) kinder\w*|\btabelle\b|\bpersonalakte\w*|\bgeburtsdat\w*",
        r"\badresses?\b|\bsalaires?\b|\bfiches? de paie\b|\bnotes\b|\bbulletins?\b|\bplaintes?\b"
        r"|\bcomptes?[- ]rendus?\b|\bdossiers? m[ée]dic\w*|\bphotos? des enfants\b|\bliste des "
        r"(?:élèves|membres|adhérents|salariés|patients|habitants)\b|\btableur\b|\bdonnées personnelles\b",
    ),
    "x8:open-link": any_of(
        r"\banyone (?:with|who has) the link\b|\blink (?:set to|is|was) ['\"‘“]?(?:anyone|public|open)"
        r"|\b(?:set|made|switched)\b[^.?!\n]{0,30}\bto ['\"‘“]?(?:anyone|public|everyone)\b",
        r"\bpublic (?:bucket|link|share|url)\b|\bpublicly (?:readable|accessible|visible)\b"
        r"|\bno password on the (?:folder|drive|share|file)\b",
        r"\bcualquiera con el enlace\b|\benlace p[uú]blico\b|\bjeder mit dem link\b|\b[öo]ffentlicher link\b"
        r"|\btoute personne (?:ayant|disposant) (?:du|le) lien\b|\blien public\b",
    ),
    "x8:home-hazard": any_of(
        r"\b(?:wardrobe|dresser|bookcase|bookshelf|chest of drawers|cabinet|shelving|tv|television"
        r"|telly|cupboard)\b[^.?!\n]{0,80}\b(?:not|isn't|aren't|never|haven'?t|without|yet to be)\b"
        r"[^.?!\n]{0,30}\b(?:fixed|anchored|strapped|secured|bolted|screwed|attached|tethered)\b",
        r"\b(?:not|isn't|haven'?t|without|never) (?:been )?(?:fixed|anchored|strapped|secured|bolted)"
        r" (?:it |them )?to the wall\b|\bclimb\w* (?:up )?(?:the )?(?:open )?drawers\b",
        r"\bblind cords?\b|\bcurtain cords?\b|\bbutton batter\w*|\bcoin (?:cell|batter\w*)"
        r"|\bswallow\w*[^.?!\n]{0,30}\bmagnets?\b|\bmagnets?\b[^.?!\n]{0,30}\bswallow\w*",
        r"\b(?:window|balcony|stair gate|stairgate|stairs)\b[^.?!\n]{0,60}\b(?:toddler|baby|kids?|crawl\w*)"
        r"|\b(?:toddler|baby|kids?)\b[^.?!\n]{0,60}\b(?:open window|balcony|top of the stairs|no stair gate)",
        r"\b(?:pool|pond|hot tub|paddling pool)\b[^.?!\n]{0,60}\b(?:no fence|unfenced|unsupervised"
        r"|alone|gate (?:is )?(?:open|broken))\b",
        r"\b(?:space |patio |gas |paraffin |oil )?heater\b[^.?!\n]{0,60}\b(?:overnight|blanket|curtain"
        r"|bedroom|tent|while (?:we|I) sleep)\b|\bcarbon monoxide (?:alarm|detector|poison\w*|leak\w*)\b|\bco (?:alarm|detector)\b"
        r"|\bsmell(?:s|ing)? (?:of )?gas\b|\bgas smell\b",
        r"\bextension (?:leads?|cords?)\b[^.?!\n]{0,60}\b(?:into|daisy|another|chain\w*|under the rug)"
        r"|\b(?:generator|barbecue|bbq|charcoal|camping stove)\b[^.?!\n]{0,50}\b(?:inside|indoors|garage"
        r"|tent|living room|kitchen)\b|\bladder\b[^.?!\n]{0,40}\b(?:alone|on my own|nobody)\b",
        r"\bmueble\b[^.?!\n]{0,60}\bsin (?:anclar|fijar|sujetar)\b|\bsin (?:anclar|fijar) a la pared\b"
        r"|\bpilas? de bot[oó]n\b|\bimanes?\b|\bolor a gas\b|\bmon[oó]xido\b|\bestufa\b|\bbrasero\b",
        r"\bnicht (?:an der wand )?(?:befestigt|verschraubt|gesichert)\b|\bknopfzelle\w*|\bmagnete?\b"
        r"|\bgasgeruch\b|\briecht nach gas\b|\bkohlenmonoxid\b|\bheizl[üu]fter\b|\bmehrfachsteck\w*",
        r"\bpas (?:encore )?(?:fix[ée]e?s?|accroch[ée]e?s?) au mur\b|\bpiles? bouton\b|\baimants?\b"
        r"|\bodeur de gaz\b|\bsent le gaz\b|\bmonoxyde\b|\bchauffage d'appoint\b|\bmultiprises?\b",
    ),
    "x8:works": any_of(
        r"\bload[- ]bearing\b|\bsupporting wall\b|\blisted (?:wall|building|house|cottage|barn)\b"
        r"|\bconservation area\b|\bstructural (?:wall|beam)\b|\bknock(?:ing)? (?:down|through)\b",
        r"\b(?:no|without|skip\w*|without a|without any) (?:building )?(?:permit|permission|planning"
        r"|building regs|inspection|sign-?off)\b|\basbestos\b|\bconsumer unit\b|\bfuse ?box\b"
        r"|\brewir\w*|\bgas (?:pipe|boiler|hob|line)\b[^.?!\n]{0,40}\bmyself\b",
        r"\bmuro de carga\b|\bpared maestra\b|\bsin (?:licencia|permiso)\b|\bamianto\b|\btirar (?:un|el) muro\b",
        r"\btragende wand\b|\bdenkmalgesch[üu]tzt\w*|\bohne (?:baugenehmigung|genehmigung)\b|\basbest\b"
        r"|\bwand (?:raus|einrei[sß]\w*)",
        r"\bmur porteur\b|\bclass[ée] monument\b|\bsans permis\b|\bamiante\b|\babattre (?:le|un) mur\b",
    ),
    "x8:known-danger": any_of(
        r"\b(?:scuba|div(?:e|ed|ing))\b[^.?!\n]{0,60}\b(?:fl(?:y|ying|ight)|plane)\b"
        r"|\b(?:fl(?:y|ying|ight)|plane)\b[^.?!\n]{0,60}\b(?:scuba|div(?:e|ed|ing))\b",
        r"\b(?:xylitol|grapes?|raisins?|chocolate|onions?|macadamia|ibuprofen|paracetamol)\b[^.?!\n]{0,60}"
        r"\b(?:dog|puppy|cat|kitten)\b|\b(?:dog|puppy|cat|kitten)\b[^.?!\n]{0,60}\b(?:xylitol|grapes?"
        r"|raisins?|chocolate|lil(?:y|ies)|antifreeze)\b",
        r"\brear[- ]facing\b[^.?!\n]{0,60}\bair ?bag\b|\bair ?bag\b[^.?!\n]{0,60}\brear[- ]facing\b"
        r"|\bhoney\b[^.?!\n]{0,40}\b(?:baby|infant|\d+[- ]month)|\b(?:baby|infant)\b[^.?!\n]{0,40}\bhoney\b",
        r"\b(?:drink\w*|wine|beers?|alcohol|vodka)\b[^.?!\n]{0,60}\b(?:sleeping pills?|diazepam|xanax"
        r"|oxy\w*|paracetamol|tylenol|metronidazole|codeine)\b|\bwater on (?:a |the )?(?:burning|hot) oil\b",
        r"\b(?:bucear|buceo)\b[^.?!\n]{0,60}\b(?:vuelo|avi[oó]n|volar)\b|\bperro\b[^.?!\n]{0,60}"
        r"\b(?:xilitol|uvas|chocolate)\b|\bmiel\b[^.?!\n]{0,40}\bbeb[eé]\b",
        r"\btauch\w*\b[^.?!\n]{0,60}\b(?:flug|fliegen)\b|\bhund\b[^.?!\n]{0,60}\b(?:xylit|trauben"
        r"|schokolade)\b|\bhonig\b[^.?!\n]{0,40}\bbaby\b|\breboard\w*[^.?!\n]{0,40}\bairbag\b",
        r"\bplong\w*\b[^.?!\n]{0,60}\b(?:vol|avion)\b|\bchien\b[^.?!\n]{0,60}\b(?:xylitol|raisins"
        r"|chocolat)\b|\bmiel\b[^.?!\n]{0,40}\bb[ée]b[ée]\b|\bdos à la route\b[^.?!\n]{0,40}\bairbag\b",
    ),
    "x8:money-proxy": any_of(
        r"\b(?:her|his|their|my (?:gran|nan|nana|grandma|grandad|mum|mom|dad)'?s?) (?:bank |debit |credit )?"
        r"cards? (?:and|&) (?:her |his |their )?pin\b|\bcard and pin\b|\bknows? (?:her|his|their) pin\b",
        r"\b(?:online banking|bank) (?:login|password|details)\b[^.?!\n]{0,60}\b(?:friend|carer|neighbour"
        r"|boyfriend|girlfriend|helper|someone)\b|\b(?:new friend|carer|helper|boyfriend)\b[^.?!\n]{0,80}"
        r"\b(?:bank|savings|pin|card|cash|withdraw\w*|transfer\w*)\b",
        r"\btarjeta y (?:el )?pin\b|\bsu pin\b|\bkarte und (?:die )?pin\b|\bseine pin\b|\bihre pin\b"
        r"|\bcarte (?:bancaire )?et (?:le |son )?code\b|\bson code (?:pin|secret)\b",
    ),
}
EXPOSURE_NAMES: tuple[str, ...] = (*_SOURCES, "x8:exposure")
# What the ``situation-floor`` rule escalates on (sharing or records alone is ordinary).
SITUATIONS: tuple[str, ...] = (
    "x8:exposure",
    "x8:open-link",
    "x8:home-hazard",
    "x8:works",
    "x8:known-danger",
    "x8:money-proxy",
)


# Each compiled on first need, and searched only where its literals are (loomc.risk.prescan).
FAMILIES = LazyPatterns(_SOURCES, _F)


@per_prompt
def families_of(prompt: str) -> tuple[str, ...]:
    """The families that match ``prompt``, in ``EXPOSURE_NAMES`` order (``x8:exposure`` when
    both an act of sharing and records about people are named)."""
    hits = list(FAMILIES.matching(prompt))
    if "x8:share" in hits and "x8:records" in hits:
        hits.append("x8:exposure")
    return tuple(hits)


def exposure_vector(prompt: str) -> list[float]:
    """Classifier columns, in ``EXPOSURE_NAMES`` order."""
    hits = set(families_of(prompt))
    return [float(n in hits) for n in EXPOSURE_NAMES]


def situations_of(prompt: str) -> tuple[str, ...]:
    """The families the ``situation-floor`` rule escalates on."""
    return tuple(n for n in families_of(prompt) if n in SITUATIONS)

"""Phrase tables for the synthetic sample (`chronicle.sample`).

Kept apart from the generator so the logic stays readable. Templates use `str.format` fields; the
generator only fills the fields a table documents next to it. Everything here is fiction: hospitals
are real names used as plausible sites, all people, subjects and numbers are made up.
"""

from __future__ import annotations

SITE_POOL: tuple[str, ...] = (
    "北京协和医院",
    "四川大学华西医院",
    "中山大学附属第一医院",
    "复旦大学附属中山医院",
    "浙江大学医学院附属第一医院",
    "华中科技大学同济医学院附属同济医院",
    "中南大学湘雅医院",
    "山东大学齐鲁医院",
)

# The first five match the names in the docs' examples (project 0 gets them verbatim); project 0 draws
# from the first 15 names, later projects from the rest.
NAME_POOL: tuple[str, ...] = (
    "王敏", "李建国", "陈静", "赵磊", "周涛",
    "刘洋", "张伟", "杨帆", "黄丽", "吴昊", "徐婷", "孙鹏", "马骁", "朱琳", "胡斌",
    "郭颖", "何畅", "高远", "林晓", "罗佳", "梁宇", "宋佳怡", "郑凯", "谢雨桐", "韩冰",
    "唐瑞", "冯倩", "于洋", "董雪", "萧然", "程亮", "曹蕾", "袁野", "邓琪", "许诺",
)

# Indexed by project position; a third project reuses the list cyclically.
TRIAL_TITLES: tuple[str, ...] = (
    "评估 {p} 联合含铂双药化疗一线治疗晚期非小细胞肺癌的多中心、开放标签 II 期研究",
    "{p} 治疗复发/难治性弥漫大B细胞淋巴瘤的单臂、多中心 Ib/II 期研究",
    "{p} 辅助治疗 HER2 阳性早期乳腺癌的多中心随机对照研究",
)

# --- operation log templates -------------------------------------------------------------
# fields: subj, visit, site, n, items
VISIT_TEMPLATES: tuple[str, ...] = (
    "{subj} 完成 {visit} 访视（{items}），数据已录入 EDC",
    "{subj} {visit} 访视顺利完成，{items}结果已归档",
    "{subj} 今日 {visit} 返院，完成{items}，下次访视已预约",
)
VISIT_ITEMS: tuple[str, ...] = (
    "血常规+生化", "生命体征、体格检查", "CT 肿瘤评估", "心电图", "PK 采血", "QLQ-C30 问卷",
    "尿常规、凝血功能",
)

# fields: subj, site, icf, arm
ENROLL_TEMPLATES: tuple[str, ...] = (
    "{subj} 签署知情同意书（{icf}），筛选合格，今日完成随机，分配至{arm}，首次给药顺利",
    "{site}新入组 1 例：{subj}，已完成 C1D1 给药，无输注反应",
    "{subj} 入组成功（{arm}），筛选期检查均符合入排标准，已在 IWRS 登记",
)
ARMS: tuple[str, ...] = ("A 组（试验组）", "B 组（对照组）")

# CTCAE v5.0 wording
AE_TERMS: tuple[str, ...] = (
    "中性粒细胞计数降低", "贫血", "血小板计数降低", "恶心", "呕吐", "腹泻", "乏力", "皮疹", "发热",
    "丙氨酸氨基转移酶升高", "食欲下降", "口腔黏膜炎", "周围感觉神经病变", "高血压", "甲状腺功能减退",
)
RELATEDNESS: tuple[str, ...] = ("肯定有关", "很可能有关", "可能有关", "可能无关", "肯定无关")
AE_ACTIONS: dict[int, tuple[str, ...]] = {
    1: ("继续观察，未予处理", "嘱受试者居家观察，下次访视复查"),
    2: ("予对症治疗，维持原剂量", "予对症处理，已好转"),
    3: ("暂停给药，予对症处理后复查", "住院观察中，暂停本周期给药"),
    4: ("立即停药并转入病房处理", "紧急处理后病情稳定，暂停给药"),
}
# fields: subj, visit, grade, term, rel, action
AE_TEMPLATES: tuple[str, ...] = (
    "{subj} {visit} 出现 {grade} 级{term}（CTCAE v5.0），研究者判断与研究药物{rel}，{action}",
    "AE 上报：{subj} {term} {grade} 级，与研究药物{rel}；{action}",
)

SAE_TERMS: tuple[str, ...] = (
    "发热性中性粒细胞减少症", "肺部感染", "免疫相关性肺炎", "急性肾损伤", "肺栓塞", "上消化道出血",
)
# fields: subj, term, grade, onset, hours, crc
SAE_TEMPLATES: tuple[str, ...] = (
    "【SAE】{subj} 因{term}（{grade} 级）于 {onset} 住院治疗，{crc} 已在 {hours} 小时内完成首次报告"
    "（申办方、伦理委员会）",
    "【SAE 首次报告】{subj} {onset} 因{term}住院（CTCAE {grade} 级），已于获知后 {hours} 小时内上报，"
    "随访报告待出院后补充",
)
# fields: subj, monitor
SAE_FOLLOWUPS: tuple[str, ...] = (
    "{subj} 的 SAE 已收到，医学审评意见：与研究药物可能有关，请中心补充出院小结和实验室检查单",
    "已审阅 {subj} SAE 首次报告，请 24 小时内补充合并用药及既往病史",
)

# fields per kind: subj, visit, n, reason, old, new, crit
DEVIATION_TEMPLATES: dict[str, tuple[str, ...]] = {
    "访视超窗": (
        "方案偏离（访视超窗）：{subj} {visit} 超窗 {n} 天（窗口期 ±3 天），原因：{reason}",
        "{subj} {visit} 访视超出时间窗 {n} 天，已记录方案偏离并告知申办方",
    ),
    "漏采血": (
        "方案偏离（漏采血）：{subj} {visit} 漏采给药后 {n}h PK 血样，已报告申办方",
        "{subj} {visit} 安全性实验室检查漏采血，已安排补采并记录偏离",
    ),
    "知情同意版本错误": (
        "方案偏离（知情同意版本错误）：{subj} 签署的知情同意书为旧版 {old}，应为 {new}，"
        "已安排重新签署并上报伦理",
    ),
    "入排标准违背": (
        "方案偏离（入排标准违背）：{subj} 入组时{crit}，不符合方案要求，医学监查评估后决定是否继续治疗",
    ),
}
WINDOW_REASONS: tuple[str, ...] = ("受试者返乡", "受试者感冒发热", "检查预约排队", "节假日停诊", "交通原因")
CRITERIA: tuple[str, ...] = (
    "肌酐清除率 52 mL/min（要求 ≥ 60）",
    "ECOG 评分为 2 分（要求 0–1 分）",
    "距末次化疗不足 4 周",
    "基线 ALT 为 3.2 倍正常值上限",
)

QUERY_FIELDS: tuple[str, ...] = (
    "生命体征", "血常规", "合并用药", "AE 结束日期", "给药记录", "肿瘤评估", "实验室检查单位", "访视日期",
)
QUERY_ISSUES: tuple[str, ...] = (
    "与原始病历不一致", "数值超出正常范围但未标注临床意义", "缺失", "单位填写错误", "逻辑核查不通过",
)
# fields: qid, subj, visit, field, issue
QUERY_OPEN: tuple[str, ...] = (
    "【Query {qid}】{subj} {visit} {field}：{issue}，请核实并更正",
    "EDC 质疑 {qid} 已发出：{subj} {field}{issue}",
)
QUERY_ANSWER: tuple[str, ...] = (
    "【Query {qid} 已回复】{subj} {field} 已按原始记录更正，请 DM 复核",
    "Query {qid} 已回复：{field} 核对原始资料无误，补充说明已上传",
)
QUERY_CLOSE: tuple[str, ...] = (
    "【Query {qid} 已关闭】{subj} {field} 复核通过",
    "Query {qid} 关闭：更正内容与原始记录一致",
)

# fields: site, n, k, issue
MONITORING_TEMPLATES: tuple[str, ...] = (
    "{site}第 {n} 次常规监查完成：SDV 覆盖全部已入组受试者，发现问题 {k} 项（{issue}）",
    "完成{site}现场监查（第 {n} 次），核查 ISF 与药品管理记录，待整改 {k} 项：{issue}",
)
MONITORING_ISSUES: tuple[str, ...] = (
    "研究药物温度记录缺 2 天", "AE 记录与病历不一致", "ISF 缺少最新版研究者简历", "样本交接单未签字", "无",
)
SIV_TEMPLATE = "{site}启动会（SIV）已完成，研究者培训签到表已归档，中心正式开放筛选"

# --- PI decisions (fields noted per entry) ------------------------------------------------
DECISION_AMEND_SUBMIT = (
    "方案修订 {new}（更新入排标准及 PK 采血时间点）已定稿，决定今日提交组长单位伦理委员会审查"
)
DECISION_AMEND_APPROVED = "方案 {new} 已获伦理批准，决定自下周一起各中心统一启用新版知情同意书（{new}）"
DECISION_PAUSE = (
    "{site}连续出现知情同意版本错误，经与申办方和医学监查讨论，决定暂停该中心入组，"
    "整改完成前不得筛选新受试者"
)
DECISION_RESUME = "{site}整改已完成并经 CRA 现场核查，决定即日起恢复该中心入组"
DECISION_DOSE = "鉴于 {subj} 发生 {grade} 级{term}，决定该受试者下一周期剂量下调一个剂量水平（{dose}）"
DECISION_CLOSE = "全国累计入组 {n} 例，已达到方案计划样本量，决定即日起停止筛选，入组关闭"
DECISION_MISC: tuple[str, ...] = (
    "周例会决定：数据库锁定目标时间定为 {date}，各中心本月内关闭全部 Query",
    "决定将 PK 亚组扩展至{site}，由该中心 CRC 负责采样",
    "决定后续影像评估统一由独立影像评估委员会（IRC）阅片",
)
DOSE_LEVELS: tuple[str, ...] = ("240 mg → 180 mg", "200 mg/m² → 150 mg/m²", "10 mg/kg → 7.5 mg/kg")

# --- chat -----------------------------------------------------------------------------------
# Small talk the weekly summary must leave out. Fields: site, n, day.
CHITCHAT: tuple[str, ...] = (
    "中午一起去食堂吗？听说今天有红烧肉",
    "有人拼奶茶吗，满 {n} 杯免配送费",
    "外卖到了，先放前台了",
    "今天降温好厉害，大家多穿点",
    "下大雨了，没带伞的可以拿前台的共享伞",
    "周例会改到{day}下午三点，腾讯会议链接稍后发群里",
    "明天上午我请假半天，有事电话联系",
    "打印机又卡纸了，谁会修",
    "周五团建，记得在表格里报名",
    "高铁晚点了，可能晚到半小时",
    "今天空调坏了，办公室 30 度",
    "楼下新开了一家咖啡店，第二杯半价",
    "好的收到 👍",
    "大家辛苦了，今天早点下班",
    "周末有人去爬山吗",
    "停车场今天满了，大家尽量坐地铁",
    "会议室 {n} 被占了，我们换到小会议室",
    "生日快乐🎂 蛋糕在茶水间",
)
# Work chatter: real information, but not an operation event.
WORK_CHAT: tuple[str, ...] = (
    "研究药物第 {n} 批已到{site}中心药房，已验收入库",
    "中心实验室样本本周五统一冷链寄出，请各中心周四前打包好",
    "EDC 系统今晚 22:00–24:00 维护，届时无法录入",
    "提醒：请各中心本周内完成上周访视数据录入",
    "申办方下周来{site}稽查，请提前准备研究者文件夹",
    "{site}本周筛选 {n} 例，其中 1 例筛败（肝功能不达标）",
    "本周三周例会纪要已上传共享盘，请大家查看",
    "新版 CRF 填写指南已发群文件，主要改了合并用药部分",
    "{site}药房温度计校准证书快过期了，请尽快更新",
)
WEEKDAYS_CN: tuple[str, ...] = ("周一", "周二", "周三", "周四", "周五", "周六", "周日")

# Edge events at the end of a week. Fields: subj, site.
SUNDAY_LATE: tuple[str, ...] = (
    "周末加班把本周访视数据都补录进 EDC 了，{site}已无待录入页面",
    "刚核完{site}这周的 AE 汇总表，明早发给大家",
    "周日晚上提醒一下：明早 8 点 {subj} 空腹采血，别忘了",
)
SUNDAY_UTC: tuple[str, ...] = (
    "（出差中，按北京时间已是周一凌晨）本周 AE 列表已审阅，意见明早同步",
    "刚下飞机，看到周末的 SAE 随访资料了，周一上午电话沟通",
    "EDC 夜间批量核查已跑完，新生成的质疑明早处理",
)

# --- daily notes (AI assistant session log) -------------------------------------------------
# fields for all note templates: user, assistant, project, project2, n, time, site, date, model
NOTE_TITLES: tuple[str, ...] = ("今日会话记录", "Session log", "日志", "Daily notes")
NOTE_SECTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "tools": (
        "工具与配置 / Tools",
        (
            "把 `LLM_URL` 切到 `http://10.0.3.12:8000/v1`（vLLM，`{model}`），原来的 Ollama 太慢",
            "Added a cron job: every Monday 06:00 run `chronicle weekly` for {project} and {project2}",
            "飞书 webhook 改成新的群机器人地址，旧的已失效",
            "Embedding 模型从 `bge-small-zh` 升级到 `BAAI/bge-m3`，向量库需要重建",
            "`DISTILL_DAYS` set to 7; memory distillation now runs after the weekly report",
            "EDC 导出改为 CSV（列名 study/time/user/event/text），已加 column_map",
            "Google Calendar API token refreshed; scope 只读",
        ),
    ),
    "prefs": (
        "用户偏好 / 作息",
        (
            "{user}习惯早上 7:30 前看消息，晚上 22:30 以后不要推送通知",
            "{user} prefers 周报先给结论，再列数据，500 字以内",
            "{user}周三下午固定门诊，这个时段不安排会议",
            "{user}喝咖啡只要美式，不加糖（订会议茶歇时记住）",
            "{user} likes tables for enrolment numbers, not charts",
            "{user}周末一般不处理工作，除非是 SAE",
        ),
    ),
    "rules": (
        "行为规则 / Rules",
        (
            "对外发邮件前必须先把草稿给{user}确认，不能直接发送",
            "Never paste subject-identifying data (姓名、身份证号) into any external tool",
            "SAE 相关消息无论几点都要立刻提醒{user}",
            "Always cite the source log line when stating a number in a report",
            "不确定的数字宁可写“待核实”，不要猜",
        ),
    ),
    "persona": (
        "人设与说话风格",
        (
            "说话风格：简洁、礼貌，先结论后细节，不用 emoji",
            "对用户统一称呼“{user}”，对 CRC 同事直接称名字",
            "Tone: calm and factual; avoid 夸张词汇 like “重大突破”",
            "中文为主，技术名词保留英文（EDC, SAE, SDV）",
        ),
    ),
    "identity": (
        "身份 / Identity",
        (
            "我叫「{assistant}」，是{user}的临床项目助理，负责 {project} 和 {project2} 的周报与提醒",
            "Role: trial-ops assistant for the IIT team at {site}; not a medical decision maker",
            "{user}是 {project} 的项目经理，也是我唯一的 owner",
        ),
    ),
    "facts": (
        "项目事实",
        (
            "截至 {date}，{project} 累计入组 {n} 例",
            "{project} 的组长单位是{site}，数据库锁定目标在下个季度",
            "{project2} 目前采用方案 V3.0，知情同意书同步为 V3.0",
            "{project} 周例会固定在周三 14:00，腾讯会议",
        ),
    ),
}
NOTE_PARAGRAPHS: tuple[str, ...] = (
    "今天主要在整理 {project} 的周报素材。{user}提到下周要向申办方汇报入组进度，"
    "所以把各中心的入组数和 SAE 情况单独列了一张表。",
    "Spent most of the session cleaning up reminders. {user} asked me to stop sending the daily "
    "digest on weekends; 已更新提醒规则。",
    "和{user}对了一下 {project2} 的 Query 清单，大部分已经关闭，剩下的集中在{site}。",
    "A quiet day. Only checked the EDC export and confirmed that the {time} sync ran without errors.",
    "{user}说最近太忙，希望周报更短一些，重点只写入组、安全性和 PI 决策三块。",
)
NOTE_SLUGS: tuple[str, ...] = ("api-migration", "weekly-report-format", "sae-followup", "edc-export")
ASSISTANT_NAMES: tuple[str, ...] = ("小舟", "阿澈", "Nova")

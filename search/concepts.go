package search

import "slices"

// concepts is the small synonym table that lets a query in one language or
// wording find a device described in another: "灯" finds "Desk lamp",
// "speaker" finds a device whose tool is self.audio_speaker.set_volume, "卧室"
// finds rooms named 主卧 and 次卧. Each line is a concept, its kind, and the
// terms that name it. A term may name several concepts; the first is its
// primary meaning, the others are broader ones (主卧 is also a bedroom).
var conceptTable = []struct {
	id, kind string
	terms    []string
}{
	// Rooms.
	{"living", "room", []string{"客厅", "起居室", "大厅", "living room", "livingroom", "lounge", "sitting room"}},
	{"master_bedroom", "room", []string{"主卧", "主卧室", "master bedroom"}},
	{"guest_bedroom", "room", []string{"次卧", "客卧", "客房", "guest room", "guest bedroom", "second bedroom"}},
	{"bedroom", "room", []string{"卧室", "睡房", "bedroom"}},
	{"kids_room", "room", []string{"儿童房", "儿童间", "孩子房间", "小孩房", "宝宝房", "kids room", "kid room", "nursery", "children room"}},
	{"study", "room", []string{"书房", "study", "study room"}},
	{"office", "room", []string{"办公室", "office"}},
	{"kitchen", "room", []string{"厨房", "kitchen"}},
	{"dining", "room", []string{"餐厅", "饭厅", "dining room", "dining"}},
	{"bathroom", "room", []string{"卫生间", "浴室", "洗手间", "厕所", "bathroom", "restroom", "toilet", "washroom"}},
	{"balcony", "room", []string{"阳台", "balcony"}},
	{"entrance", "room", []string{"玄关", "门厅", "走廊", "过道", "entrance", "hallway", "hall", "corridor", "entryway"}},
	{"garage", "room", []string{"车库", "garage"}},
	{"garden", "room", []string{"花园", "院子", "庭院", "garden", "yard", "patio"}},

	// Kinds of device.
	{"light", "type", []string{"灯", "灯光", "电灯", "照明", "吸顶灯", "台灯", "落地灯", "床头灯", "灯带", "夜灯", "吊灯", "筒灯",
		"light", "lamp", "lighting", "bulb", "ceiling light", "floor lamp", "desk lamp"}},
	{"speaker", "type", []string{"音箱", "音响", "扬声器", "喇叭", "speaker", "audio speaker", "soundbar"}},
	{"screen", "type", []string{"屏幕", "显示屏", "屏", "screen", "display"}},
	{"camera", "type", []string{"摄像头", "相机", "监控", "camera", "webcam", "cam"}},
	{"ac", "type", []string{"空调", "冷气", "air conditioner", "aircon", "ac", "a c", "hvac"}},
	{"fan", "type", []string{"风扇", "电扇", "电风扇", "吊扇", "落地扇", "排气扇", "换气扇", "fan", "ceiling fan", "exhaust fan"}},
	{"tv", "type", []string{"电视", "电视机", "tv", "television"}},
	{"curtain", "type", []string{"窗帘", "纱帘", "百叶窗", "curtain", "blind", "shade", "drape"}},
	{"purifier", "type", []string{"空气净化器", "净化器", "purifier", "air purifier"}},
	{"humidifier", "type", []string{"加湿器", "加湿", "humidifier", "humidify"}},
	{"dehumidifier", "type", []string{"除湿机", "除湿器", "抽湿机", "除湿", "抽湿", "dehumidifier", "dehumidify"}},
	{"fresh_air", "type", []string{"新风", "新风机", "新风系统", "fresh air", "fresh air system", "ventilation", "ventilator"}},
	{"window", "type", []string{"窗户", "窗", "开窗器", "推窗器", "window", "window opener"}},
	{"heater", "type", []string{"取暖器", "暖风机", "电暖器", "电暖气", "暖气", "浴霸", "heater", "radiator", "space heater"}},
	{"vacuum", "type", []string{"扫地机", "扫地机器人", "扫拖机器人", "扫拖一体", "拖地机", "洗地机", "吸尘器", "robot vacuum", "vacuum", "roomba",
		"robot cleaner", "cleaning robot", "mop"}},
	{"lock", "type", []string{"门锁", "智能锁", "锁", "lock", "door lock"}},
	{"plug", "type", []string{"插座", "插头", "智能插座", "plug", "socket", "outlet", "smart plug"}},
	{"doorbell", "type", []string{"门铃", "doorbell"}},
	{"sensor", "type", []string{"传感器", "探测器", "sensor", "detector"}},
	{"kettle", "type", []string{"水壶", "热水壶", "电水壶", "烧水壶", "养生壶", "kettle"}},
	{"dispenser", "type", []string{"饮水机", "净饮机", "管线机", "water dispenser", "dispenser"}},
	{"cooker", "type", []string{"电饭煲", "电饭锅", "电压力锅", "rice cooker", "cooker", "pressure cooker"}},
	{"washer", "type", []string{"洗衣机", "washer", "washing machine"}},
	{"dryer", "type", []string{"烘干机", "干衣机", "dryer", "tumble dryer"}},
	{"clothes_rack", "type", []string{"晾衣架", "晾衣杆", "晾衣机", "clothes rack", "drying rack", "clothes drying rack"}},
	{"fridge", "type", []string{"冰箱", "fridge", "refrigerator"}},
	{"water_heater", "type", []string{"热水器", "water heater"}},
	{"weather", "type", []string{"天气", "天气预报", "气象", "weather", "forecast"}},
	{"calculator", "type", []string{"计算器", "计算", "calculator", "calculate", "calculation", "calc", "math", "arithmetic"}},
	{"assistant", "type", []string{"小智", "语音助手", "助手", "xiaozhi", "assistant", "voice assistant"}},

	// Capabilities (found mostly in tool and thing descriptions).
	{"volume", "cap", []string{"音量", "声音", "大声", "小声", "静音", "volume", "loud", "louder", "quiet", "mute"}},
	{"brightness", "cap", []string{"亮度", "调亮", "调暗", "brightness", "brighter", "dim", "dimmer"}},
	{"theme", "cap", []string{"主题", "深色", "浅色", "暗色", "夜间模式", "theme", "dark mode", "light mode"}},
	{"photo", "cap", []string{"拍照", "拍张照", "照片", "拍摄", "photo", "picture", "take photo", "snapshot"}},
	{"temperature", "cap", []string{"温度", "气温", "制冷", "制热", "热", "冷", "凉快", "暖和",
		"temperature", "thermostat", "cool", "cooler", "heat", "hot", "cold", "warm", "warmer"}},
	{"humidity", "cap", []string{"湿度", "humidity"}},
	{"battery", "cap", []string{"电池", "电量", "充电", "battery", "charging"}},
	{"music", "cap", []string{"音乐", "歌", "播放", "music", "song", "play"}},
	{"color", "cap", []string{"颜色", "色温", "rgb", "color", "colour"}},
	{"power", "cap", []string{"开关", "电源", "power", "switch"}},
}

// broader lists the concepts a concept implies: a master bedroom is a
// bedroom, a volume control belongs to a speaker.
var broader = map[string][]string{
	"master_bedroom": {"bedroom"},
	"guest_bedroom":  {"bedroom"},
	"kids_room":      {"bedroom"},
	"volume":         {"speaker"},
	"music":          {"speaker"},
	"brightness":     {"screen", "light"},
	"theme":          {"screen"},
	"photo":          {"camera"},
	"temperature":    {"ac", "heater", "sensor"},
	"humidity":       {"humidifier", "sensor"},
}

// stopTerms carry no meaning for finding a device: particles, politeness,
// and the verbs of almost every command.
var stopTerms = []string{
	"的", "地", "得", "把", "将", "请", "帮我", "帮忙", "给我", "一下", "我", "我的", "你", "吗", "呢", "了", "吧", "啊", "呀",
	"在", "里", "里面", "中", "上", "个", "那", "这", "那个", "这个", "所有", "全部", "都", "和", "跟", "还有",
	"打开", "开启", "开", "关闭", "关掉", "关", "调", "调到", "调成", "调高", "调低", "设置", "设为", "设成", "看看", "查看", "查询", "是", "多少", "现在", "一点",
	"the", "a", "an", "in", "on", "off", "of", "to", "at", "for", "my", "me", "please", "turn", "set", "all", "and",
	"is", "what", "which", "it", "up", "down", "s", "can", "you", "how", "much",
}

type concept struct {
	id, kind string
	n        int // its place in conceptTable
}

type dictEntry struct {
	units    []string
	concepts []concept // primary first, then broader ones
	needs    []*need   // needs the term expresses (a query's side only)
	stop     bool
}

// dictionary maps a term's unit key to its meaning. It is read only once
// newDictionary returns it (theDictionary shares it).
type dictionary struct {
	entries  map[string]*dictEntry
	maxUnits int
}

func newDictionary() *dictionary {
	d := &dictionary{entries: map[string]*dictEntry{}}
	byID := map[string]concept{}
	for i, c := range conceptTable {
		byID[c.id] = concept{c.id, c.kind, i}
	}
	for _, c := range conceptTable {
		cs := []concept{byID[c.id]}
		for _, b := range broader[c.id] {
			cs = append(cs, byID[b])
		}
		for _, t := range c.terms {
			d.entry(t).addConcepts(cs)
		}
	}
	for _, n := range needTable {
		nd := &need{id: n.id, nAnswer: len(n.answers)}
		for _, id := range append(append([]string(nil), n.answers...), n.also...) {
			c, ok := byID[id]
			if !ok {
				panic("search: need " + n.id + " names no concept " + id)
			}
			nd.answers = append(nd.answers, c)
		}
		for _, t := range needPhrases(n.feel, n.say) {
			if e := d.entry(t); e != nil && !slices.Contains(e.needs, nd) {
				e.needs = append(e.needs, nd)
				e.stop = false
			}
		}
	}
	for _, t := range stopTerms {
		if e := d.entry(t); e != nil && len(e.concepts) == 0 && len(e.needs) == 0 {
			e.stop = true
		}
	}
	return d
}

// entry returns the entry for term, adding an empty one; nil if the term
// has no units.
func (d *dictionary) entry(term string) *dictEntry {
	units := tokenize(term)
	if len(units) == 0 {
		return nil
	}
	k := key(units)
	e, ok := d.entries[k]
	if !ok {
		e = &dictEntry{units: units}
		d.entries[k] = e
		d.maxUnits = max(d.maxUnits, len(units))
	}
	return e
}

func (e *dictEntry) addConcepts(cs []concept) {
	if e == nil {
		return
	}
	e.stop = false
	for _, c := range cs {
		if !hasConcept(e.concepts, c.id) {
			e.concepts = append(e.concepts, c)
		}
	}
}

func hasConcept(cs []concept, id string) bool {
	for _, c := range cs {
		if c.id == id {
			return true
		}
	}
	return false
}

// longest returns the longest dictionary entry starting at units[i], or nil.
func (d *dictionary) longest(units []string, i int) *dictEntry {
	for n := min(d.maxUnits, len(units)-i); n > 0; n-- {
		if e, ok := d.entries[key(units[i:i+n])]; ok {
			return e
		}
	}
	return nil
}

// conceptsIn returns every concept named in units (longest terms first, no
// overlaps), each with the term that named it; with needs, also the
// concepts that answer the needs named.
func (d *dictionary) conceptsIn(units []string, needs bool) []found {
	var out []found
	for i := 0; i < len(units); {
		e := d.longest(units, i)
		if e == nil {
			i++
			continue
		}
		out = e.meanings(out, needs)
		i += len(e.units)
	}
	return out
}

// meanings appends what the entry means: its concepts (the first primary,
// the others broader) and, with needs, the concepts answering its needs.
func (e *dictEntry) meanings(out []found, needs bool) []found {
	term := display(e.units)
	for j, c := range e.concepts {
		out = append(out, found{concept: c, term: term, broad: j > 0})
	}
	if !needs {
		return out
	}
	for _, n := range e.needs {
		for j, c := range n.answers {
			out = append(out, found{concept: c, term: term, broad: j >= n.nAnswer, need: n, rank: j})
		}
	}
	return out
}

type found struct {
	concept concept
	term    string
	broad   bool  // a broader meaning of the term, not its primary one
	need    *need // the need the concept answers, if any
	rank    int   // the concept's place among the need's answers
}

// Kafka clients for a rehearsal (infra/tools/rehearsal/clients.py): requests as JSON, one per line
// on standard input, answered in turn by one line on standard output, {"answer": {...}} or
// {"error": "<the exception's stack trace>"}. Kafka's own Java clients, so that every client
// property is read as Kafka reads it; each request builds its own clients from its own config,
// so one JVM serves a rehearsal's requests without one leaking into the next. Keys, values and
// headers are UTF-8 strings.
//
//   {"op": "produce", "config": {...}, "topic": "t", "records": [{"key", "value", "headers": {}, "timestamp"}]}
//   {"op": "consume", "config": {...}, "topics": ["t"], "count": 3, "timeoutMs": 30000,
//    "group": null | "g" (subscribe and commit), "isolation": "read_uncommitted" | "read_committed"}
//   {"op": "topics", "config": {...}}
//   {"op": "createTopics", "config": {...}, "topics": [{"name": "t", "partitions": 1}]}
//   {"op": "groupOffsets", "config": {...}, "group": "g"}
//   {"op": "endOffsets", "config": {...}, "topics": ["t"]}
//   {"op": "topicConfigs", "config": {...}, "topic": "t"}
//       (the topic's configuration entries set on the topic itself: name -> value)
//   {"op": "alterTopicConfigs", "config": {...}, "topic": "t", "set": {"retention.ms": "1000"}}
//   {"op": "createAcls", "config": {...}, "acls": [{"topic": "t", "principal": "User:a", "operation": "READ"}]}
//   {"op": "alterScram", "config": {...}, "user": "u", "mechanism": "SCRAM-SHA-512", "password": "p"}
//       (the user's credential for that mechanism replaced)
//   {"op": "acls", "config": {...}}
//       (every ACL binding: resource type, name, pattern type, principal, host, operation, permission)
//   {"op": "load", "config": {...}, "topic": "t", "count": 100000, "size": 512, "rate": 0}
//       (as fast as the producer goes, or `rate` records a second when it is above 0; answers the
//        elapsed milliseconds)
//   {"op": "latency", "config": {...}, "topic": "t", "count": 100000, "timeoutMs": 300000}
//       (reads from the start until `count` records; answers, per record, the delay from its
//        timestamp to its arrival here: p50, p99, max, and the first and last arrival times)

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public final class Clients {
    private static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        // Standard output carries the answers alone: what else writes to System.out (a logging
        // backend's console appender) goes to standard error.
        java.io.PrintStream replies = new java.io.PrintStream(
                new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        java.io.BufferedReader in = new java.io.BufferedReader(
                new java.io.InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            ObjectNode reply = JSON.createObjectNode();
            try {
                reply.set("answer", handle(JSON.readTree(line)));
            } catch (Exception e) {
                java.io.StringWriter trace = new java.io.StringWriter();
                e.printStackTrace(new java.io.PrintWriter(trace));
                reply.put("error", trace.toString());
            }
            replies.println(JSON.writeValueAsString(reply));
            replies.flush();
        }
    }

    private static ObjectNode handle(JsonNode request) throws Exception {
        Properties config = new Properties();
        request.get("config").fields().forEachRemaining(e -> config.put(e.getKey(), e.getValue().asText()));
        ObjectNode answer = JSON.createObjectNode();
        switch (request.get("op").asText()) {
            case "produce": produce(config, request, answer); break;
            case "consume": consume(config, request, answer); break;
            case "topics": topics(config, answer); break;
            case "createTopics": createTopics(config, request); break;
            case "deleteTopics": deleteTopics(config, request); break;
            case "groupOffsets": groupOffsets(config, request.get("group").asText(), answer); break;
            case "endOffsets": endOffsets(config, strings(request.get("topics")), answer); break;
            case "leaders": leaders(config, strings(request.get("topics")), answer); break;
            case "topicConfigs": topicConfigs(config, request.get("topic").asText(), answer); break;
            case "alterTopicConfigs": alterTopicConfigs(config, request); break;
            case "createAcls": createAcls(config, request); break;
            case "acls": acls(config, answer); break;
            case "alterScram": alterScram(config, request); break;
            case "load": load(config, request, answer); break;
            case "latency": latency(config, request, answer); break;
            default: throw new IllegalArgumentException("unknown op " + request.get("op"));
        }
        return answer;
    }

    private static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asText()));
        return out;
    }

    private static void produce(Properties config, JsonNode request, ObjectNode answer) throws Exception {
        config.put("key.serializer", StringSerializer.class.getName());
        config.put("value.serializer", StringSerializer.class.getName());
        config.putIfAbsent("acks", "all");
        ArrayNode sent = answer.putArray("offsets");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(config)) {
            for (JsonNode r : request.get("records")) {
                ProducerRecord<String, String> record = new ProducerRecord<>(request.get("topic").asText(),
                        r.hasNonNull("partition") ? r.get("partition").asInt() : null,
                        r.hasNonNull("timestamp") ? r.get("timestamp").asLong() : null,
                        r.hasNonNull("key") ? r.get("key").asText() : null,
                        r.hasNonNull("value") ? r.get("value").asText() : null);
                if (r.has("headers")) {
                    r.get("headers").fields().forEachRemaining(h ->
                            record.headers().add(h.getKey(), h.getValue().asText().getBytes(StandardCharsets.UTF_8)));
                }
                sent.add(producer.send(record).get().offset());
            }
        }
    }

    private static void consume(Properties config, JsonNode request, ObjectNode answer) throws Exception {
        config.put("key.deserializer", StringDeserializer.class.getName());
        config.put("value.deserializer", StringDeserializer.class.getName());
        config.put("auto.offset.reset", "earliest");
        config.put("enable.auto.commit", "false");
        config.put("isolation.level", request.path("isolation").asText("read_uncommitted"));
        String group = request.path("group").isTextual() ? request.get("group").asText() : null;
        if (group != null) {
            config.put("group.id", group);
        }
        List<String> topics = strings(request.get("topics"));
        int count = request.get("count").asInt();
        long deadline = System.currentTimeMillis() + request.path("timeoutMs").asLong(30000);
        ArrayNode records = answer.putArray("records");
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(config)) {
            if (group != null) {
                consumer.subscribe(topics);
            } else {
                // Topics that do not exist yet are waited for, until the deadline.
                List<TopicPartition> partitions = new ArrayList<>();
                for (String t : topics) {
                    partitions.addAll(partitionsOf(consumer, t, deadline));
                }
                if (partitions.isEmpty()) {
                    return;
                }
                consumer.assign(partitions);
                consumer.seekToBeginning(partitions);
            }
            // A group reads exactly `count` records and commits the position after each one it
            // returns (a drill counts what a consumer read before a failover); without a group,
            // whatever the polls bring until `count` is reached, so that a duplicate shows.
            Map<TopicPartition, OffsetAndMetadata> read = new HashMap<>();
            while (records.size() < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    if (group != null && records.size() >= count) {
                        break;
                    }
                    ObjectNode out = records.addObject();
                    out.put("topic", r.topic());
                    out.put("partition", r.partition());
                    out.put("offset", r.offset());
                    out.put("timestamp", r.timestamp());
                    out.put("key", r.key());
                    out.put("value", r.value());
                    ObjectNode headers = out.putObject("headers");
                    for (Header h : r.headers()) {
                        headers.put(h.key(), h.value() == null ? null : new String(h.value(), StandardCharsets.UTF_8));
                    }
                    read.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                if (group != null && !read.isEmpty()) {
                    consumer.commitSync(read);
                }
            }
        }
    }

    // A topic's partitions, waited for until the deadline: the topic may not exist yet (the
    // connector creates it), and a metadata request that times out on a loaded machine (a TLS or
    // SASL handshake under load) is one more "not yet", not a failure, while time is left.
    private static List<TopicPartition> partitionsOf(KafkaConsumer<?, ?> consumer, String topic, long deadline)
            throws InterruptedException {
        List<TopicPartition> partitions = new ArrayList<>();
        while (true) {
            try {
                consumer.partitionsFor(topic, Duration.ofSeconds(5))
                        .forEach(p -> partitions.add(new TopicPartition(topic, p.partition())));
            } catch (org.apache.kafka.common.errors.TimeoutException e) {
                if (System.currentTimeMillis() >= deadline) {
                    throw e;
                }
            }
            if (!partitions.isEmpty() || System.currentTimeMillis() >= deadline) {
                return partitions;
            }
            Thread.sleep(250);
        }
    }

    private static void topics(Properties config, ObjectNode answer) throws Exception {
        try (Admin admin = Admin.create(config)) {
            ArrayNode names = answer.putArray("topics");
            new java.util.TreeSet<>(admin.listTopics().names().get()).forEach(names::add);
        }
    }

    private static void createTopics(Properties config, JsonNode request) throws Exception {
        List<NewTopic> topics = new ArrayList<>();
        for (JsonNode t : request.get("topics")) {
            // The broker's default replication factor, as `kafka-topics.sh --create` without
            // --replication-factor: every broker of a rehearsal's cluster of three, one of one.
            topics.add(new NewTopic(t.get("name").asText(), Optional.of(t.path("partitions").asInt(1)),
                                    Optional.empty()));
        }
        try (Admin admin = Admin.create(config)) {
            admin.createTopics(topics).all().get();
        }
    }

    private static void deleteTopics(Properties config, JsonNode request) throws Exception {
        try (Admin admin = Admin.create(config)) {
            admin.deleteTopics(strings(request.get("topics"))).all().get();
        }
    }

    private static void topicConfigs(Properties config, String topic, ObjectNode answer) throws Exception {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        try (Admin admin = Admin.create(config)) {
            Config found = admin.describeConfigs(List.of(resource)).all().get().get(resource);
            ObjectNode out = answer.putObject("configs");
            for (ConfigEntry entry : found.entries()) {
                if (entry.source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG) {
                    out.put(entry.name(), entry.value());
                }
            }
        }
    }

    private static void alterTopicConfigs(Properties config, JsonNode request) throws Exception {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, request.get("topic").asText());
        List<AlterConfigOp> ops = new ArrayList<>();
        request.get("set").fields().forEachRemaining(e -> ops.add(
                new AlterConfigOp(new ConfigEntry(e.getKey(), e.getValue().asText()), AlterConfigOp.OpType.SET)));
        try (Admin admin = Admin.create(config)) {
            admin.incrementalAlterConfigs(Map.of(resource, ops)).all().get();
        }
    }

    private static void createAcls(Properties config, JsonNode request) throws Exception {
        List<AclBinding> bindings = new ArrayList<>();
        for (JsonNode acl : request.get("acls")) {
            bindings.add(new AclBinding(
                    new ResourcePattern(ResourceType.TOPIC, acl.get("topic").asText(), PatternType.LITERAL),
                    new AccessControlEntry(acl.get("principal").asText(), "*",
                            AclOperation.valueOf(acl.get("operation").asText()), AclPermissionType.ALLOW)));
        }
        try (Admin admin = Admin.create(config)) {
            admin.createAcls(bindings).all().get();
        }
    }

    private static void alterScram(Properties config, JsonNode request) throws Exception {
        ScramMechanism mechanism = ScramMechanism.fromMechanismName(request.get("mechanism").asText());
        try (Admin admin = Admin.create(config)) {
            admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(request.get("user").asText(),
                    new ScramCredentialInfo(mechanism, 8192), request.get("password").asText()))).all().get();
        }
    }

    private static void acls(Properties config, ObjectNode answer) throws Exception {
        try (Admin admin = Admin.create(config)) {
            ArrayNode out = answer.putArray("acls");
            List<String> lines = new ArrayList<>();
            for (AclBinding b : admin.describeAcls(AclBindingFilter.ANY).values().get()) {
                lines.add(String.join(" ", b.pattern().resourceType().name(), b.pattern().name(),
                        b.pattern().patternType().name(), b.entry().principal(), b.entry().host(),
                        b.entry().operation().name(), b.entry().permissionType().name()));
            }
            lines.stream().sorted().forEach(out::add);
        }
    }

    private static void groupOffsets(Properties config, String group, ObjectNode answer) throws Exception {
        try (Admin admin = Admin.create(config)) {
            Map<TopicPartition, OffsetAndMetadata> offsets =
                    admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            ObjectNode out = answer.putObject("offsets");
            new TreeMap<>(key(offsets)).forEach(out::put);
        }
    }

    private static Map<String, Long> key(Map<TopicPartition, OffsetAndMetadata> offsets) {
        Map<String, Long> out = new HashMap<>();
        offsets.forEach((tp, om) -> { if (om != null) out.put(tp.topic() + ":" + tp.partition(), om.offset()); });
        return out;
    }

    private static void endOffsets(Properties config, Collection<String> topics, ObjectNode answer) throws Exception {
        try (Admin admin = Admin.create(config)) {
            Map<TopicPartition, OffsetSpec> wanted = new HashMap<>();
            for (TopicDescription d : admin.describeTopics(topics).allTopicNames().get().values()) {
                d.partitions().forEach(p -> wanted.put(new TopicPartition(d.name(), p.partition()), OffsetSpec.latest()));
            }
            ObjectNode out = answer.putObject("offsets");
            Map<String, Long> ends = new TreeMap<>();
            admin.listOffsets(wanted).all().get().forEach((tp, info) -> ends.put(tp.topic() + ":" + tp.partition(), info.offset()));
            ends.forEach(out::put);
        }
    }

    /** Each partition's leader and in-sync replicas, by broker id: "topic:partition" -> {leader, isr}. */
    private static void leaders(Properties config, Collection<String> topics, ObjectNode answer) throws Exception {
        try (Admin admin = Admin.create(config)) {
            ObjectNode out = answer.putObject("partitions");
            for (TopicDescription d : new TreeMap<>(admin.describeTopics(topics).allTopicNames().get()).values()) {
                for (org.apache.kafka.common.TopicPartitionInfo p : d.partitions()) {
                    ObjectNode one = out.putObject(d.name() + ":" + p.partition());
                    one.put("leader", p.leader() == null ? -1 : p.leader().id());
                    ArrayNode isr = one.putArray("isr");
                    p.isr().forEach(n -> isr.add(n.id()));
                }
            }
        }
    }

    private static void load(Properties config, JsonNode request, ObjectNode answer) throws Exception {
        config.put("key.serializer", StringSerializer.class.getName());
        config.put("value.serializer", org.apache.kafka.common.serialization.ByteArraySerializer.class.getName());
        config.putIfAbsent("acks", "all");
        config.putIfAbsent("linger.ms", "5");
        // No idempotence, no retries: a record is written once or its send fails (and the load
        // with it, at once). At full speed on a topic just created, the first sends may meet
        // NotLeaderOrFollowerException; the idempotent producer of the 3.8 clients retried them
        // into batches refused as out of order (OutOfOrderSequenceException, incoming sequence 0)
        // and the load failed only after the delivery timeout. A caller that loads a new topic
        // loads again on failure (benchmarks/replication.py).
        config.putIfAbsent("enable.idempotence", "false");
        config.putIfAbsent("retries", "0");
        int count = request.get("count").asInt();
        byte[] value = new byte[request.get("size").asInt()];
        new java.util.Random(42).nextBytes(value);
        String topic = request.get("topic").asText();
        double rate = request.path("rate").asDouble(0);
        long start = System.nanoTime();
        // Every send accounted for: a record the producer gave up on fails the request, rather
        // than leaving a benchmark waiting for a record that was never written.
        java.util.concurrent.atomic.AtomicLong failed = new java.util.concurrent.atomic.AtomicLong();
        java.util.concurrent.atomic.AtomicReference<Exception> firstError = new java.util.concurrent.atomic.AtomicReference<>();
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(config)) {
            for (int i = 0; i < count; i++) {
                if (rate > 0) {
                    // Paced from the start, not from the last send: a late send is not made up
                    // for by sleeping less later, it is sent at once.
                    long due = start + (long) (i * 1e9 / rate);
                    long early = due - System.nanoTime();
                    if (early > 0) {
                        Thread.sleep(early / 1_000_000, (int) (early % 1_000_000));
                    }
                }
                producer.send(new ProducerRecord<>(topic, Integer.toString(i), value), (metadata, error) -> {
                    if (error != null) {
                        failed.incrementAndGet();
                        firstError.compareAndSet(null, error);
                    }
                });
            }
            producer.flush();
        }
        if (failed.get() > 0) {
            throw new IllegalStateException(failed.get() + " of " + count + " records not written to " + topic,
                                            firstError.get());
        }
        answer.put("elapsedMs", (System.nanoTime() - start) / 1_000_000);
    }

    private static void latency(Properties config, JsonNode request, ObjectNode answer) throws Exception {
        config.put("key.deserializer", org.apache.kafka.common.serialization.ByteArrayDeserializer.class.getName());
        config.put("value.deserializer", org.apache.kafka.common.serialization.ByteArrayDeserializer.class.getName());
        config.put("auto.offset.reset", "earliest");
        config.put("enable.auto.commit", "false");
        config.putIfAbsent("fetch.max.wait.ms", "10");
        String topic = request.get("topic").asText();
        int count = request.get("count").asInt();
        long deadline = System.currentTimeMillis() + request.path("timeoutMs").asLong(300000);
        long[] delays = new long[count];
        int seen = 0;
        long bytes = 0, first = 0, last = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(config)) {
            List<TopicPartition> partitions = partitionsOf(consumer, topic, deadline);
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            while (seen < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) {
                    long now = System.currentTimeMillis();
                    if (seen == 0) first = now;
                    last = now;
                    if (seen < count) delays[seen] = now - r.timestamp();
                    seen++;
                    bytes += r.serializedValueSize() + Math.max(0, r.serializedKeySize());
                }
            }
        }
        long[] got = java.util.Arrays.copyOf(delays, Math.min(seen, count));
        java.util.Arrays.sort(got);
        answer.put("records", seen);
        answer.put("bytes", bytes);
        answer.put("firstArrival", first);
        answer.put("lastArrival", last);
        answer.put("p50", got.length == 0 ? -1 : got[(int) (got.length * 0.50)]);
        answer.put("p99", got.length == 0 ? -1 : got[Math.min(got.length - 1, (int) (got.length * 0.99))]);
        answer.put("max", got.length == 0 ? -1 : got[got.length - 1]);
    }
}
